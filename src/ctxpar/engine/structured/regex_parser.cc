#include "ctxpar/engine/structured/regex_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "ctxpar/core/error.h"

namespace ctxpar::structured {
namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr uint32_t kSurrogateLo = 0xD800;
constexpr uint32_t kSurrogateHi = 0xDFFF;
constexpr int kMaxGroupDepth = 200;

// The pattern as code points, each with the byte offset it starts at (for error messages).
struct Text {
  std::vector<uint32_t> cp;
  std::vector<size_t> at;
};

Text decode(std::string_view s) {
  Text t;
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<uint8_t>(s[i]);
    int n = b < 0x80                ? 0
            : b >= 0xF0 && b < 0xF5 ? 3
            : b >= 0xE0             ? 2
            : b >= 0xC2 && b < 0xE0 ? 1
                                    : -1;
    CTXPAR_CHECK_INPUT(n >= 0 && i + static_cast<size_t>(n) < s.size(),
                       "the regex is not valid UTF-8 (byte {} of the pattern)", i);
    uint32_t c = n == 0 ? b : b & (0x3F >> n);
    for (int k = 1; k <= n; ++k) {
      const auto cb = static_cast<uint8_t>(s[i + static_cast<size_t>(k)]);
      CTXPAR_CHECK_INPUT((cb & 0xC0) == 0x80,
                         "the regex is not valid UTF-8 (byte {} of the pattern)",
                         i + static_cast<size_t>(k));
      c = (c << 6) | (cb & 0x3F);
    }
    const uint32_t min = n == 0 ? 0 : n == 1 ? 0x80 : n == 2 ? 0x800 : 0x10000;
    CTXPAR_CHECK_INPUT(c >= min && c <= kMaxCodePoint && (c < kSurrogateLo || c > kSurrogateHi),
                       "the regex is not valid UTF-8 (byte {} of the pattern)", i);
    t.cp.push_back(c);
    t.at.push_back(i);
    i += static_cast<size_t>(n) + 1;
  }
  t.at.push_back(s.size());
  return t;
}

CodePointSet one(uint32_t c) {
  return {{c, c}};
}

CodePointSet digits() {
  return {{'0', '9'}};
}
CodePointSet word() {
  return normalize_set({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}});
}
CodePointSet space() {
  return normalize_set({{'\t', '\r'},
                        {' ', ' '},
                        {0xA0, 0xA0},
                        {0x1680, 0x1680},
                        {0x2000, 0x200A},
                        {0x2028, 0x2029},
                        {0x202F, 0x202F},
                        {0x205F, 0x205F},
                        {0x3000, 0x3000},
                        {0xFEFF, 0xFEFF}});
}
CodePointSet any() {
  return complement_set({});
}

class Parser {
 public:
  explicit Parser(std::string_view pattern) : text_(decode(pattern)) {}

  Regex parse() {
    // '^' first and '$' last anchor the whole text, which is matched whole anyway.
    if (!text_.cp.empty() && text_.cp.front() == '^') begin_ = 1;
    end_ = text_.cp.size();
    if (end_ > begin_ && text_.cp[end_ - 1] == '$' && !escaped_at(end_ - 1)) --end_;
    pos_ = begin_;
    out_.root = alternation();
    if (pos_ < end_) fail(pos_, "unbalanced parenthesis ')'");
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(size_t i, const std::string& what) const {
    throw InputError(
        fmt::format("regex: {} at position {}", what, text_.at[std::min(i, text_.at.size() - 1)]));
  }

  // Whether the code point at i is escaped by an odd run of backslashes before it.
  bool escaped_at(size_t i) const {
    size_t n = 0;
    while (i > n && text_.cp[i - n - 1] == '\\') ++n;
    return n % 2 == 1;
  }

  bool more() const { return pos_ < end_; }
  uint32_t peek() const { return text_.cp[pos_]; }
  bool peek_is(uint32_t c, size_t ahead = 0) const {
    return pos_ + ahead < end_ && text_.cp[pos_ + ahead] == c;
  }

  int32_t add(RegexNode n) {
    out_.nodes.push_back(std::move(n));
    return static_cast<int32_t>(out_.nodes.size()) - 1;
  }
  int32_t set_node(CodePointSet s) {
    RegexNode n;
    n.kind = RegexNode::Kind::kSet;
    n.set = std::move(s);
    return add(std::move(n));
  }

  int32_t alternation() {
    std::vector<int32_t> branches{concat()};
    while (peek_is('|')) {
      ++pos_;
      branches.push_back(concat());
    }
    if (branches.size() == 1) return branches[0];
    RegexNode n;
    n.kind = RegexNode::Kind::kAlternation;
    n.children = std::move(branches);
    return add(std::move(n));
  }

  int32_t concat() {
    RegexNode n;
    n.kind = RegexNode::Kind::kConcat;
    while (more() && peek() != '|' && peek() != ')') n.children.push_back(quantified());
    if (n.children.size() == 1) return n.children[0];
    return add(std::move(n));
  }

  // {m}, {m,}, {,n}, {m,n} or {,} (Python's {0,}) at pos_ (which holds '{'), or nothing (a
  // literal '{').
  bool counts(int32_t& min, int32_t& max, size_t& after) const {
    size_t i = pos_ + 1;
    const auto number = [&](int64_t& v) {
      const size_t from = i;
      v = 0;
      while (i < end_ && text_.cp[i] >= '0' && text_.cp[i] <= '9') {
        v = std::min<int64_t>(v * 10 + (text_.cp[i] - '0'), int64_t{1} << 40);
        ++i;
      }
      return i > from;
    };
    int64_t lo = 0;
    int64_t hi = -1;
    const bool has_lo = number(lo);
    if (i < end_ && text_.cp[i] == ',') {
      ++i;
      if (!number(hi)) hi = -1;  // {m,} and Python's {,}: unbounded
    } else {
      if (!has_lo) return false;
      hi = lo;
    }
    if (i >= end_ || text_.cp[i] != '}') return false;
    if (lo > kMaxRepeat || hi > kMaxRepeat) {
      fail(pos_, fmt::format("a repetition count above {} (ctxpar's limit)", kMaxRepeat));
    }
    if (hi >= 0 && hi < lo) fail(pos_, "min repeat greater than max repeat");
    min = static_cast<int32_t>(lo);
    max = static_cast<int32_t>(hi);
    after = i + 1;
    return true;
  }

  int32_t quantified() {
    int32_t node = atom();
    bool repeated = false;
    while (more()) {
      const size_t at = pos_;
      int32_t min = 0;
      int32_t max = -1;
      const uint32_t c = peek();
      if (c == '*') {
        ++pos_;
      } else if (c == '+') {
        min = 1;
        ++pos_;
      } else if (c == '?') {
        max = 1;
        ++pos_;
      } else if (c == '{') {
        size_t after = 0;
        if (!counts(min, max, after)) break;
        pos_ = after;
      } else {
        break;
      }
      if (repeated) fail(at, "multiple repeat");
      repeated = true;
      if (peek_is('?') || peek_is('+')) ++pos_;  // lazy / possessive: the same language
      RegexNode n;
      n.kind = RegexNode::Kind::kRepeat;
      n.children = {node};
      n.min = min;
      n.max = max;
      node = add(std::move(n));
    }
    return node;
  }

  int32_t atom() {
    const size_t at = pos_;
    const uint32_t c = text_.cp[pos_++];
    switch (c) {
      case '(':
        return group(at);
      case '[':
        return set_node(bracket(at));
      case '.':
        return set_node(any());
      case '\\':
        return set_node(escape(false));
      case '*':
      case '+':
      case '?':
        fail(at, "nothing to repeat");
      case '^':
        fail(at, "'^' anywhere but at the start of the pattern (ctxpar matches the whole text)");
      case '$':
        fail(at, "'$' anywhere but at the end of the pattern (ctxpar matches the whole text)");
      default:
        return set_node(one(c));
    }
  }

  int32_t group(size_t at) {
    // The parser and the automaton builder recurse once per level.
    if (++depth_ > kMaxGroupDepth) {
      fail(at, fmt::format("groups nested deeper than {} (ctxpar's limit)", kMaxGroupDepth));
    }
    if (peek_is('?')) {
      if (peek_is(':', 1)) {
        pos_ += 2;
      } else if (peek_is('P', 1) && peek_is('<', 2)) {
        pos_ += 3;
        skip_name(at);
      } else if (peek_is('<', 1) && !peek_is('=', 2) && !peek_is('!', 2)) {
        pos_ += 2;
        skip_name(at);
      } else if (peek_is('=', 1) || peek_is('!', 1) || peek_is('<', 1)) {
        fail(at, "lookaround ((?=, (?!, (?<=, (?<!) is not supported");
      } else if (peek_is('P', 1) && peek_is('=', 2)) {
        fail(at, "a backreference ((?P=name)) is not supported");
      } else {
        fail(at, "an inline flag or other (?...) extension is not supported");
      }
    }
    const int32_t inner = alternation();
    if (!peek_is(')')) fail(at, "missing ), unterminated subpattern");
    ++pos_;
    --depth_;
    return inner;
  }

  void skip_name(size_t at) {
    while (more() && peek() != '>') ++pos_;
    if (!more()) fail(at, "missing >, unterminated name");
    ++pos_;
  }

  uint32_t hex(int digits, size_t at) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      if (!more()) fail(at, "incomplete escape");
      const uint32_t c = peek();
      int d = -1;
      if (c >= '0' && c <= '9') d = static_cast<int>(c - '0');
      if (c >= 'a' && c <= 'f') d = static_cast<int>(c - 'a' + 10);
      if (c >= 'A' && c <= 'F') d = static_cast<int>(c - 'A' + 10);
      if (d < 0) fail(at, "incomplete escape");
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    if (v > kMaxCodePoint) fail(at, "an escape beyond U+10FFFF");
    return v;
  }

  // After a backslash. `in_class`: \b is a backspace there.
  CodePointSet escape(bool in_class) {
    const size_t at = pos_ - 1;
    if (!more()) fail(at, "bad escape (end of pattern)");
    const uint32_t c = text_.cp[pos_++];
    switch (c) {
      case 'd':
        return digits();
      case 'D':
        return complement_set(digits());
      case 'w':
        return word();
      case 'W':
        return complement_set(word());
      case 's':
        return space();
      case 'S':
        return complement_set(space());
      case 'n':
        return one('\n');
      case 't':
        return one('\t');
      case 'r':
        return one('\r');
      case 'f':
        return one('\f');
      case 'v':
        return one('\v');
      case 'a':
        return one('\a');
      case '0':
        return one(0);
      case 'x':
      case 'u':
      case 'U': {
        const uint32_t v = hex(c == 'x' ? 2 : c == 'u' ? 4 : 8, at);
        // No UTF-8 text holds a surrogate. In a class it may end a range, and the class drops
        // the surrogates (normalize_set).
        if (!in_class && v >= kSurrogateLo && v <= kSurrogateHi) {
          fail(at, "a surrogate escape (U+D800..U+DFFF), which no UTF-8 text holds");
        }
        return one(v);
      }
      case 'b':
        if (in_class) return one('\b');
        fail(at, "a word boundary (\\b) is not supported");
      default:
        break;
    }
    if (c >= '1' && c <= '9') fail(at, "a backreference is not supported");
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
    if (alnum) fail(at, fmt::format("bad escape \\{}", static_cast<char>(c)));
    return one(c);  // an escaped punctuation or non-ASCII character is itself
  }

  CodePointSet bracket(size_t at) {
    bool negated = false;
    if (peek_is('^')) {
      negated = true;
      ++pos_;
    }
    std::vector<CodePointRange> ranges;
    bool first = true;
    for (;;) {
      if (!more()) fail(at, "unterminated character set");
      if (peek() == ']' && !first) {
        ++pos_;
        break;
      }
      first = false;
      const size_t item = pos_;
      CodePointSet lo_set = class_item();
      if (peek_is('-') && pos_ + 1 < end_ && text_.cp[pos_ + 1] != ']') {
        ++pos_;
        const CodePointSet hi_set = class_item();
        if (lo_set.size() != 1 || lo_set[0].lo != lo_set[0].hi || hi_set.size() != 1 ||
            hi_set[0].lo != hi_set[0].hi) {
          fail(item, "bad character range");
        }
        if (hi_set[0].lo < lo_set[0].lo) fail(item, "bad character range (reversed)");
        ranges.push_back({lo_set[0].lo, hi_set[0].lo});
      } else {
        ranges.insert(ranges.end(), lo_set.begin(), lo_set.end());
      }
    }
    CodePointSet s = normalize_set(std::move(ranges));
    return negated ? complement_set(s) : s;
  }

  CodePointSet class_item() {
    const uint32_t c = text_.cp[pos_++];
    if (c == '\\') return escape(true);
    return one(c);
  }

  Text text_;
  size_t begin_ = 0;
  size_t end_ = 0;
  size_t pos_ = 0;
  int depth_ = 0;  // groups open at pos_
  Regex out_;
};

}  // namespace

CodePointSet normalize_set(std::vector<CodePointRange> ranges) {
  std::vector<CodePointRange> cut;
  for (const CodePointRange& r : ranges) {  // without the surrogates
    if (r.hi < kSurrogateLo || r.lo > kSurrogateHi) {
      cut.push_back(r);
      continue;
    }
    if (r.lo < kSurrogateLo) cut.push_back({r.lo, kSurrogateLo - 1});
    if (r.hi > kSurrogateHi) cut.push_back({kSurrogateHi + 1, r.hi});
  }
  std::sort(cut.begin(), cut.end(),
            [](const CodePointRange& a, const CodePointRange& b) { return a.lo < b.lo; });
  CodePointSet out;
  for (const CodePointRange& r : cut) {
    if (!out.empty() && r.lo <= out.back().hi + 1) {  // overlapping or adjacent: one range
      out.back().hi = std::max(out.back().hi, r.hi);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

CodePointSet complement_set(const CodePointSet& set) {
  std::vector<CodePointRange> out;
  uint32_t next = 0;
  for (const CodePointRange& r : set) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return normalize_set(std::move(out));
}

Regex parse_regex(std::string_view pattern) {
  return Parser(pattern).parse();
}

}  // namespace ctxpar::structured
