#include "ctxpar/engine/structured/json_automaton.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>

#include "ctxpar/core/error.h"
#include "ctxpar/engine/structured/string_scan.h"

namespace ctxpar::structured {

namespace {

// What a frame does with a byte.
enum class Step : uint8_t {
  kReject,      // the frame refuses the byte
  kConsumed,    // the frame took the byte and goes on
  kDone,        // the frame took the byte, which ended its value
  kDoneRefeed,  // the value ended before the byte (a number): the parent reads the byte
  kPush,        // a value starts with the byte: push it and let it read the byte
};

// Phases of each frame kind.
enum StringPhase : uint8_t { kStrOpen = 0, kStrIn = 1 };
enum NumberPhase : uint8_t {
  kNumStart = 0,
  kNumMinus = 1,
  kNumZero = 2,
  kNumInt = 3,
  kNumDot = 4,
  kNumFrac = 5,
  kNumE = 6,
  kNumESign = 7,
  kNumExp = 8
};
enum ObjectPhase : uint8_t {
  kObjOpen = 0,
  kObjFirst = 1,  // after '{'
  kObjKey = 2,
  kObjColon = 3,
  kObjValue = 4,  // after ':' (and while the value is read)
  kObjAfter = 5,  // after a value
  kObjNext = 6    // after ','
};
enum ArrayPhase : uint8_t {
  kArrOpen = 0,
  kArrFirst = 1,  // after '['
  kArrItem = 2,   // an item is being read
  kArrAfter = 3,  // after an item
  kArrNext = 4    // after ','
};

bool is_ws(uint8_t b) {
  return b == ' ' || b == '\n' || b == '\t';
}
bool is_digit(uint8_t b) {
  return b >= '0' && b <= '9';
}

__extension__ using i128 = __int128;

// Whether a bounded integer whose text so far is a sign and `digits` digits of magnitude `mag`
// can still end inside [lo, hi] by appending digits (none after a leading zero).
bool integer_viable(const NumberNode& n, bool negative, int32_t digits, int64_t mag, bool zero) {
  const i128 lo = n.minimum ? i128(*n.minimum) : -(i128(1) << 100);
  const i128 hi = n.maximum ? i128(*n.maximum) : (i128(1) << 100);
  if (digits == 0) return negative ? lo <= 0 : true;  // "-" reaches 0 (as -0) and every negative
  if (digits > 19) return false;                      // beyond any int64 bound
  i128 p = 1;
  for (int32_t k = 0; k <= 19 - digits; ++k, p *= 10) {
    if (k > 0 && zero) break;
    const i128 a = i128(mag) * p;
    const i128 b = a + p - 1;
    const i128 from = negative ? -b : a;
    const i128 to = negative ? -a : b;
    if (from <= hi && to >= lo) return true;
  }
  return false;
}

bool integer_in_bounds(const NumberNode& n, bool negative, int64_t mag) {
  const i128 v = negative ? -i128(mag) : i128(mag);
  return (!n.minimum || v >= *n.minimum) && (!n.maximum || v <= *n.maximum);
}

bool bounded(const NumberNode& n) {
  return n.minimum.has_value() || n.maximum.has_value();
}

bool real_bounded(const NumberNode& n) {
  return !n.integer && (n.lower.has_value() || n.upper.has_value());
}

// A bounded real's text so far is a sign, digits whose value is `mantissa` and `scale` of them
// after the point: the double Python's float() makes of it (scale < 0: trailing zeros).
double decimal(bool negative, int64_t mantissa, int32_t scale) {
  const std::string text = fmt::format("{}{}e{}", negative ? "-" : "", mantissa, -scale);
  return std::strtod(text.c_str(), nullptr);
}

bool real_in_bounds(const NumberNode& n, double v) {
  if (n.lower && (n.lower_exclusive ? !(v > *n.lower) : !(v >= *n.lower))) return false;
  if (n.upper && (n.upper_exclusive ? !(v < *n.upper) : !(v <= *n.upper))) return false;
  return true;
}

// Whether the values from a to b (each end reached or only approached) meet the bounds.
bool meets(const NumberNode& n, double a, bool a_in, double b, bool b_in) {
  double lo = a;
  bool lo_in = a_in;
  if (n.lower && (*n.lower > lo || (*n.lower == lo && n.lower_exclusive))) {
    lo = *n.lower;
    lo_in = !n.lower_exclusive;
  }
  double hi = b;
  bool hi_in = b_in;
  if (n.upper && (*n.upper < hi || (*n.upper == hi && n.upper_exclusive))) {
    hi = *n.upper;
    hi_in = !n.upper_exclusive;
  }
  return lo < hi || (lo == hi && lo_in && hi_in);
}

// Whether a bounded real whose text so far is `f` (in `phase`) can still end inside the
// bounds. The magnitudes its completions reach: [m, m + 1) * 10^-scale after the point or a
// fraction digit, the union over more integer digits k of [m, m + 1) * 10^k in the integer
// part, [0, 1) after a leading 0; negated after a '-'. A lone '-' reaches (-inf, 0] (0 as -0).
bool real_viable(const NumberNode& n, const Frame& f, uint8_t phase) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const auto span = [&](double a, double b) {  // magnitudes [a, b)
    return f.negative ? meets(n, -b, false, -a, true) : meets(n, a, true, b, false);
  };
  if (phase == kNumMinus) return meets(n, -kInf, false, 0.0, true);
  if (f.pos > NumberNode::kMaxRealDigits) return false;
  if (f.pos >= NumberNode::kMaxRealDigits - 1) {
    // One digit at most left: the completions themselves, checked as their doubles (an
    // interval's ends would round together there and promise values no text reaches).
    const bool whole = phase == kNumZero || phase == kNumInt || phase == kNumFrac;
    if (whole && real_in_bounds(n, decimal(f.negative, f.value, f.count))) return true;
    if (f.pos == NumberNode::kMaxRealDigits) return false;
    for (int64_t d = 0; d <= 9; ++d) {
      const int64_t m = f.value * 10 + d;
      if (phase == kNumInt && real_in_bounds(n, decimal(f.negative, m, f.count))) return true;
      if (phase != kNumMinus && real_in_bounds(n, decimal(f.negative, m, f.count + 1))) {
        return true;  // after the point (kNumInt / kNumZero: a '.' first)
      }
    }
    return false;
  }
  if (phase == kNumZero) return span(0.0, 1.0);
  if (phase == kNumDot || phase == kNumFrac) {
    return span(decimal(false, f.value, f.count), decimal(false, f.value + 1, f.count));
  }
  for (int32_t k = 0; f.pos + k <= NumberNode::kMaxRealDigits; ++k) {  // kNumInt
    if (span(decimal(false, f.value, -k), decimal(false, f.value + 1, -k))) return true;
  }
  return false;
}

bool number_complete(const Frame& f, const NumberNode& n) {
  const bool done =
      f.phase == kNumZero || f.phase == kNumInt || f.phase == kNumFrac || f.phase == kNumExp;
  if (!done) return false;
  if (n.integer && (n.minimum || n.maximum)) return integer_in_bounds(n, f.negative, f.value);
  if (!n.integer && (n.lower || n.upper)) {
    return f.phase != kNumExp && real_in_bounds(n, decimal(f.negative, f.value, f.count));
  }
  return true;
}

// Objects: whether declared property p may be the next key. With minProperties /
// maxProperties, only if the object can still be closed after it: some number k of properties
// can follow p (the required ones among them) with at least required_after[p] and enough to
// reach the minimum, at most what the maximum leaves and what can still come (any number when
// undeclared ones are allowed). Then the first of those k is again a candidate, or the object
// can close, so a generation never gets stuck (schema_compiler checks the empty object).
bool candidate(const ObjectNode& o, const Frame& f, int32_t p) {
  if (f.additional || p <= f.last || p > o.next_required[static_cast<size_t>(f.last + 1)]) {
    return false;
  }
  const int64_t count = int64_t{f.count} + 1;
  const int64_t need =
      std::max<int64_t>(o.required_after[static_cast<size_t>(p)], o.min_properties - count);
  const auto n = static_cast<int64_t>(o.properties.size());
  const bool room = o.max_properties < 0 || need <= o.max_properties - count;
  return room && (o.additional >= 0 || need <= n - 1 - p);
}
// Whether an undeclared key may come now (every required property read already, room left).
bool additional_now(const ObjectNode& o, const Frame& f) {
  return o.additional >= 0 && f.last >= o.last_required &&
         (o.max_properties < 0 || f.count < o.max_properties);
}
bool can_close_object(const ObjectNode& o, const Frame& f) {
  return f.last >= o.last_required && f.count >= o.min_properties;
}
bool any_candidate(const ObjectNode& o, const Frame& f) {
  for (int32_t i = f.key_lo; i < f.key_hi; ++i) {
    if (candidate(o, f, o.by_key[static_cast<size_t>(i)])) return true;
  }
  return false;
}
bool can_start_key(const ObjectNode& o, const Frame& f) {
  if (additional_now(o, f)) return true;
  if (f.additional) return false;
  const auto n = static_cast<int32_t>(o.properties.size());
  for (int32_t p = f.last + 1; p < n; ++p) {
    if (candidate(o, f, p)) return true;
    if (o.properties[static_cast<size_t>(p)].required) break;  // none after it may come first
  }
  return false;
}

int64_t array_min(const ArrayNode& a) {
  return std::max<int64_t>(a.min_items, static_cast<int64_t>(a.prefix.size()));
}
bool can_add_item(const ArrayNode& a, const Frame& f) {
  if (a.max_items >= 0 && f.count >= a.max_items) return false;
  return f.count < static_cast<int64_t>(a.prefix.size()) || a.items >= 0;
}
int32_t item_node(const ArrayNode& a, const Frame& f) {
  return f.count < static_cast<int64_t>(a.prefix.size()) ? a.prefix[static_cast<size_t>(f.count)]
                                                         : a.items;
}

}  // namespace

JsonAutomaton::JsonAutomaton(std::shared_ptr<const Grammar> grammar)
    : grammar_(std::move(grammar)) {
  CTXPAR_CHECK(grammar_ && grammar_->root >= 0, "a JsonAutomaton needs a finalized grammar");
}

Frame JsonAutomaton::open(int32_t node) const {
  Frame f;
  f.node = node;
  return f;
}

StateSet JsonAutomaton::initial() const {
  StateSet s;
  for (const int32_t a : grammar_->alternatives(grammar_->root)) {
    const Frame f = open(a);
    push(s, std::span(&f, 1));
  }
  return s;
}

void JsonAutomaton::push(StateSet& out, std::span<const Frame> stack) {
  // Two ways of reading the same bytes that reach the same stack are one.
  for (size_t i = 0; i < out.size(); ++i) {
    const auto other = out.stack(i);
    if (other.size() == stack.size() && std::equal(other.begin(), other.end(), stack.begin())) {
      return;
    }
  }
  out.frames.insert(out.frames.end(), stack.begin(), stack.end());
  out.ends.push_back(static_cast<uint32_t>(out.frames.size()));
}

void JsonAutomaton::child_done(std::vector<Frame>& stack) const {
  if (stack.empty()) return;
  Frame& f = stack.back();
  const Node& n = grammar_->nodes[static_cast<size_t>(f.node)];
  if (n.kind == NodeKind::kObject) {
    if (f.pending >= 0) f.last = f.pending;
    f.pending = -1;
    ++f.count;
    f.phase = kObjAfter;
  } else {
    ++f.count;
    f.phase = kArrAfter;
  }
}

namespace {

struct Stepped {
  Step kind;
  int32_t node = -1;
};

// A DFA in kJsonString mode never takes a raw '"' between characters (only inside \"), and
// accepts only between characters: a '"' it refuses closes the string when the text matched.
Stepped step_patterned(const ByteDfa& dfa, Frame& f, uint8_t b) {
  const int32_t next = dfa.next(f.pos, b);
  if (next != ByteDfa::kNone) {
    f.pos = next;
    return {Step::kConsumed};
  }
  return {b == '"' && dfa.accepting(f.pos) ? Step::kDone : Step::kReject};
}

Stepped step_string(const Grammar& g, const StringNode& n, Frame& f, uint8_t b) {
  if (f.phase == kStrOpen) {
    if (b != '"') return {Step::kReject};
    f.phase = kStrIn;
    f.pos = ByteDfa::kStart;
    return {Step::kConsumed};
  }
  if (n.pattern >= 0) return step_patterned(g.regexes[static_cast<size_t>(n.pattern)], f, b);
  const bool full = n.max_length >= 0 && f.count >= n.max_length;
  switch (scan_string_byte(f.scan, b, full)) {
    case ScanResult::kReject:
      return {Step::kReject};
    case ScanResult::kClose:
      return {f.count >= n.min_length ? Step::kDone : Step::kReject};
    case ScanResult::kChar:
      ++f.count;
      return {Step::kConsumed};
    default:
      return {Step::kConsumed};
  }
}

Stepped step_bounded_real(const NumberNode& n, Frame& f, uint8_t b) {
  const auto take = [&](uint8_t phase, bool is_digit_byte, bool fraction) -> Stepped {
    Frame next = f;
    next.phase = phase;
    if (is_digit_byte) {
      if (next.pos >= NumberNode::kMaxRealDigits) return {Step::kReject};  // (and no overflow)
      next.value = next.value * 10 + (b - '0');
      ++next.pos;
      if (fraction) ++next.count;
    }
    if (!real_viable(n, next, phase)) return {Step::kReject};
    f = next;
    return {Step::kConsumed};
  };
  const auto end = [&]() -> Stepped {
    const bool whole = f.phase == kNumZero || f.phase == kNumInt || f.phase == kNumFrac;
    return {whole && real_in_bounds(n, decimal(f.negative, f.value, f.count)) ? Step::kDoneRefeed
                                                                              : Step::kReject};
  };
  switch (f.phase) {
    case kNumStart:
      if (b == '-') {
        f.negative = true;
        if (!real_viable(n, f, kNumMinus)) return {Step::kReject};
        f.phase = kNumMinus;
        return {Step::kConsumed};
      }
      [[fallthrough]];
    case kNumMinus:
      if (b == '0') return take(kNumZero, true, false);
      if (b >= '1' && b <= '9') return take(kNumInt, true, false);
      return {Step::kReject};
    case kNumZero:
    case kNumInt:
      if (is_digit(b))
        return f.phase == kNumZero ? Stepped{Step::kReject} : take(kNumInt, true, false);
      if (b == '.') return take(kNumDot, false, false);
      return end();
    case kNumDot:
      if (!is_digit(b)) return {Step::kReject};
      return take(kNumFrac, true, true);
    case kNumFrac:
      if (is_digit(b)) return take(kNumFrac, true, true);
      return end();
    default:
      return {Step::kReject};
  }
}

Stepped step_number(const NumberNode& n, Frame& f, uint8_t b) {
  if (real_bounded(n)) return step_bounded_real(n, f, b);
  const auto digit = [&](bool zero) {
    if (bounded(n)) {
      // Past int64 no bound can be met; refusing first keeps the product from overflowing.
      if (f.value > (std::numeric_limits<int64_t>::max() - (b - '0')) / 10) return false;
      f.value = f.value * 10 + (b - '0');
      ++f.pos;
      if (!integer_viable(n, f.negative, f.pos, f.value, zero)) return false;
    }
    return true;
  };
  const auto end = [&]() -> Stepped {
    return {number_complete(f, n) ? Step::kDoneRefeed : Step::kReject};
  };
  switch (f.phase) {
    case kNumStart:
      if (b == '-') {
        if (n.integer && bounded(n) && !integer_viable(n, true, 0, 0, false))
          return {Step::kReject};
        f.negative = true;
        f.phase = kNumMinus;
        return {Step::kConsumed};
      }
      [[fallthrough]];
    case kNumMinus:
      if (b == '0') {
        if (!digit(true)) return {Step::kReject};
        f.phase = kNumZero;
        return {Step::kConsumed};
      }
      if (b >= '1' && b <= '9') {
        if (!digit(false)) return {Step::kReject};
        f.phase = kNumInt;
        return {Step::kConsumed};
      }
      return {Step::kReject};
    case kNumZero:
    case kNumInt:
      if (is_digit(b)) {
        if (f.phase == kNumZero || !digit(false)) return {Step::kReject};
        return {Step::kConsumed};
      }
      if (!n.integer && b == '.') {
        f.phase = kNumDot;
        return {Step::kConsumed};
      }
      if (!n.integer && (b == 'e' || b == 'E')) {
        f.phase = kNumE;
        return {Step::kConsumed};
      }
      return end();
    case kNumDot:
      if (!is_digit(b)) return {Step::kReject};
      f.phase = kNumFrac;
      return {Step::kConsumed};
    case kNumFrac:
      if (is_digit(b)) return {Step::kConsumed};
      if (b == 'e' || b == 'E') {
        f.phase = kNumE;
        return {Step::kConsumed};
      }
      return end();
    case kNumE:
      if (b == '+' || b == '-') {
        f.phase = kNumESign;
        return {Step::kConsumed};
      }
      [[fallthrough]];
    case kNumESign:
      if (!is_digit(b)) return {Step::kReject};
      f.phase = kNumExp;
      return {Step::kConsumed};
    case kNumExp:
      if (is_digit(b)) return {Step::kConsumed};
      return end();
    default:
      return {Step::kReject};
  }
}

Stepped step_regex(const ByteDfa& dfa, Frame& f, uint8_t b) {
  const int32_t next = dfa.next(f.pos, b);
  if (next == ByteDfa::kNone) return {Step::kReject};
  f.pos = next;
  return {Step::kConsumed};
}

Stepped step_literal(const std::string& lit, Frame& f, uint8_t b) {
  if (static_cast<uint8_t>(lit[static_cast<size_t>(f.pos)]) != b) return {Step::kReject};
  ++f.pos;
  return {static_cast<size_t>(f.pos) == lit.size() ? Step::kDone : Step::kConsumed};
}

void start_key(const ObjectNode& o, Frame& f) {
  f.phase = kObjKey;
  f.scan = StringScan{};
  f.pos = 0;
  f.key_lo = 0;
  f.key_hi = static_cast<int32_t>(o.properties.size());
}

Stepped step_key(const ObjectNode& o, Frame& f, uint8_t b) {
  const ScanResult r = scan_string_byte(f.scan, b, false);
  if (r == ScanResult::kReject) return {Step::kReject};
  if (r == ScanResult::kClose) {
    // A declared key, written exactly as declared, sorts first among the keys it begins.
    if (f.key_lo < f.key_hi) {
      const int32_t p = o.by_key[static_cast<size_t>(f.key_lo)];
      if (o.properties[static_cast<size_t>(p)].key.size() == static_cast<size_t>(f.pos)) {
        if (!candidate(o, f, p)) return {Step::kReject};  // a declared name is never undeclared
        f.pending = p;
        f.phase = kObjColon;
        return {Step::kConsumed};
      }
    }
    if (!additional_now(o, f)) return {Step::kReject};
    f.pending = -2;
    f.additional = true;
    f.phase = kObjColon;
    return {Step::kConsumed};
  }
  // Narrow the declared keys to those whose byte at pos is b.
  int32_t lo = f.key_lo;
  int32_t hi = f.key_hi;
  const auto byte_at = [&](int32_t i) -> int {
    const std::string& k = o.properties[static_cast<size_t>(o.by_key[static_cast<size_t>(i)])].key;
    return static_cast<size_t>(f.pos) < k.size()
               ? static_cast<uint8_t>(k[static_cast<size_t>(f.pos)])
               : -1;
  };
  while (lo < hi && byte_at(lo) < b) ++lo;
  int32_t end = lo;
  while (end < hi && byte_at(end) == b) ++end;
  f.key_lo = lo;
  f.key_hi = end;
  ++f.pos;
  if (additional_now(o, f) || any_candidate(o, f)) return {Step::kConsumed};
  return {Step::kReject};
}

Stepped step_object(const ObjectNode& o, Frame& f, uint8_t b, bool any_ws) {
  const bool ws = any_ws && is_ws(b);
  switch (f.phase) {
    case kObjOpen:
      if (b != '{') return {Step::kReject};
      f.phase = kObjFirst;
      return {Step::kConsumed};
    case kObjFirst:
    case kObjNext:
      if (ws) return {Step::kConsumed};
      if (!any_ws && f.phase == kObjNext && !f.spaced) {  // ", " exactly
        f.spaced = b == ' ';
        return {f.spaced ? Step::kConsumed : Step::kReject};
      }
      if (b == '"' && can_start_key(o, f)) {
        start_key(o, f);
        return {Step::kConsumed};
      }
      if (b == '}' && f.phase == kObjFirst && can_close_object(o, f)) return {Step::kDone};
      return {Step::kReject};
    case kObjKey:
      return step_key(o, f, b);
    case kObjColon:
      if (ws) return {Step::kConsumed};
      if (b != ':') return {Step::kReject};
      f.phase = kObjValue;
      f.spaced = false;
      return {Step::kConsumed};
    case kObjValue:
      if (ws) return {Step::kConsumed};
      if (!any_ws && !f.spaced) {  // ": " exactly
        f.spaced = b == ' ';
        return {f.spaced ? Step::kConsumed : Step::kReject};
      }
      return {Step::kPush,
              f.pending >= 0 ? o.properties[static_cast<size_t>(f.pending)].value : o.additional};
    case kObjAfter:
      if (ws) return {Step::kConsumed};
      if (b == ',' && can_start_key(o, f)) {
        f.phase = kObjNext;
        f.spaced = false;
        return {Step::kConsumed};
      }
      if (b == '}' && can_close_object(o, f)) return {Step::kDone};
      return {Step::kReject};
    default:
      return {Step::kReject};
  }
}

Stepped step_array(const ArrayNode& a, Frame& f, uint8_t b, bool any_ws) {
  const bool ws = any_ws && is_ws(b);
  switch (f.phase) {
    case kArrOpen:
      if (b != '[') return {Step::kReject};
      f.phase = kArrFirst;
      return {Step::kConsumed};
    case kArrFirst:
    case kArrNext:
      if (ws) return {Step::kConsumed};
      if (!any_ws && f.phase == kArrNext && !f.spaced) {  // ", " exactly
        f.spaced = b == ' ';
        return {f.spaced ? Step::kConsumed : Step::kReject};
      }
      if (b == ']' && f.phase == kArrFirst) {
        return {f.count >= array_min(a) ? Step::kDone : Step::kReject};
      }
      if (!can_add_item(a, f)) return {Step::kReject};
      f.phase = kArrItem;
      return {Step::kPush, item_node(a, f)};
    case kArrAfter:
      if (ws) return {Step::kConsumed};
      if (b == ',' && can_add_item(a, f)) {
        f.phase = kArrNext;
        f.spaced = false;
        return {Step::kConsumed};
      }
      if (b == ']' && f.count >= array_min(a)) return {Step::kDone};
      return {Step::kReject};
    default:
      return {Step::kReject};
  }
}

}  // namespace

void JsonAutomaton::run(std::vector<Frame>& stack, uint8_t b, StateSet& out) const {
  for (;;) {
    if (stack.empty()) return;  // a finished document takes no more bytes
    Frame& f = stack.back();
    const Node& n = grammar_->nodes[static_cast<size_t>(f.node)];
    Stepped r{Step::kReject};
    switch (n.kind) {
      case NodeKind::kString:
        r = step_string(*grammar_, n.string, f, b);
        break;
      case NodeKind::kRegex:
        r = step_regex(grammar_->regexes[static_cast<size_t>(n.regex)], f, b);
        break;
      case NodeKind::kNumber:
        r = step_number(n.number, f, b);
        break;
      case NodeKind::kLiteral:
        r = step_literal(n.literal, f, b);
        break;
      case NodeKind::kObject:
        r = step_object(n.object, f, b, grammar_->any_whitespace);
        break;
      case NodeKind::kArray:
        r = step_array(n.array, f, b, grammar_->any_whitespace);
        break;
      case NodeKind::kUnion:
        CTXPAR_FAIL("a union node {} on the matcher's stack", f.node);
    }
    switch (r.kind) {
      case Step::kReject:
        return;
      case Step::kConsumed:
        push(out, stack);
        return;
      case Step::kDone:
        stack.pop_back();
        child_done(stack);
        push(out, stack);
        return;
      case Step::kDoneRefeed:
        stack.pop_back();
        child_done(stack);
        continue;
      case Step::kPush: {
        for (const int32_t alt : grammar_->alternatives(r.node)) {
          std::vector<Frame> branch = stack;
          branch.push_back(open(alt));
          run(branch, b, out);
        }
        return;
      }
    }
  }
}

bool JsonAutomaton::advance(const StateSet& in, uint8_t b, StateSet& out) const {
  out.clear();
  thread_local std::vector<Frame> work;
  for (size_t i = 0; i < in.size(); ++i) {
    const auto s = in.stack(i);
    work.assign(s.begin(), s.end());
    run(work, b, out);
  }
  return !out.empty();
}

bool JsonAutomaton::can_end(const StateSet& state) const {
  for (size_t i = 0; i < state.size(); ++i) {
    const auto s = state.stack(i);
    if (s.empty()) return true;
    if (s.size() == 1) {
      const Node& n = grammar_->nodes[static_cast<size_t>(s[0].node)];
      if (n.kind == NodeKind::kNumber && number_complete(s[0], n.number)) return true;
      if (n.kind == NodeKind::kRegex &&
          grammar_->regexes[static_cast<size_t>(n.regex)].accepting(s[0].pos)) {
        return true;
      }
    }
  }
  return false;
}

std::optional<int64_t> JsonAutomaton::string_room(const StateSet& state) const {
  if (state.size() != 1 || state.stack(0).empty()) return std::nullopt;
  const Frame& top = state.stack(0).back();
  const Node& n = grammar_->nodes[static_cast<size_t>(top.node)];
  if (n.kind != NodeKind::kString || n.string.pattern >= 0 || top.phase != kStrIn ||
      top.scan.state != StringScan{}.state || top.scan.need != 0) {
    return std::nullopt;
  }
  if (n.string.max_length < 0) return std::numeric_limits<int64_t>::max();
  return std::max<int64_t>(0, n.string.max_length - top.count);
}

std::optional<JsonAutomaton::RegexAt> JsonAutomaton::regex_at(const StateSet& state) const {
  if (state.size() != 1 || state.stack(0).empty()) return std::nullopt;
  const Frame& top = state.stack(0).back();
  const Node& n = grammar_->nodes[static_cast<size_t>(top.node)];
  if (n.kind == NodeKind::kRegex) {
    return RegexAt{&grammar_->regexes[static_cast<size_t>(n.regex)], top.pos, false};
  }
  if (n.kind == NodeKind::kString && n.string.pattern >= 0 && top.phase == kStrIn) {
    return RegexAt{&grammar_->regexes[static_cast<size_t>(n.string.pattern)], top.pos, true};
  }
  return std::nullopt;
}

bool JsonAutomaton::must_end(const StateSet& state) const {
  if (!can_end(state)) return false;
  StateSet next;
  for (int b = 0; b < 256; ++b) {
    if (advance(state, static_cast<uint8_t>(b), next)) return false;
  }
  return true;
}

}  // namespace ctxpar::structured
