#include "ctxpar/engine/structured/byte_dfa.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <string>

#include "ctxpar/core/error.h"

namespace ctxpar::structured {
namespace {

// Thompson NFA over bytes: a state has byte-range edges and empty edges.
struct ByteEdge {
  uint8_t lo;
  uint8_t hi;
  int32_t to;
};
struct NfaState {
  std::vector<ByteEdge> bytes;
  std::vector<int32_t> empty;
};

// NFA states above this are refused before the DFA is built (a {m,n} of a large group).
constexpr size_t kMaxNfaStates = size_t{1} << 18;

// One UTF-8 byte sequence: byte k lies in ranges[k].
struct ByteSequence {
  std::array<std::pair<uint8_t, uint8_t>, 4> ranges{};
  int length = 0;
};

int utf8_length(uint32_t c) {
  return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
}

std::array<uint8_t, 4> utf8_bytes(uint32_t c) {
  switch (utf8_length(c)) {
    case 1:
      return {static_cast<uint8_t>(c), 0, 0, 0};
    case 2:
      return {static_cast<uint8_t>(0xC0 | (c >> 6)), static_cast<uint8_t>(0x80 | (c & 0x3F)), 0, 0};
    case 3:
      return {static_cast<uint8_t>(0xE0 | (c >> 12)),
              static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3F)),
              static_cast<uint8_t>(0x80 | (c & 0x3F)), 0};
    default:
      return {
          static_cast<uint8_t>(0xF0 | (c >> 18)), static_cast<uint8_t>(0x80 | ((c >> 12) & 0x3F)),
          static_cast<uint8_t>(0x80 | ((c >> 6) & 0x3F)), static_cast<uint8_t>(0x80 | (c & 0x3F))};
  }
}

// The code points [lo, hi] (no surrogates) as byte sequences whose ranges are a product: split
// where the encoded length changes, then wherever the continuation bytes of lo and hi do not
// span their whole range, until every sequence covers exactly lo..hi byte by byte.
void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<ByteSequence>& out) {
  for (const uint32_t max : {0x7Fu, 0x7FFu, 0xFFFFu}) {
    if (lo <= max && hi > max) {
      utf8_sequences(lo, max, out);
      utf8_sequences(max + 1, hi, out);
      return;
    }
  }
  const int n = utf8_length(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;  // the low bits of i continuation bytes
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        utf8_sequences(lo, lo | m, out);
        utf8_sequences((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        utf8_sequences(lo, (hi & ~m) - 1, out);
        utf8_sequences(hi & ~m, hi, out);
        return;
      }
    }
  }
  const auto a = utf8_bytes(lo);
  const auto b = utf8_bytes(hi);
  ByteSequence s;
  s.length = n;
  for (int k = 0; k < n; ++k)
    s.ranges[static_cast<size_t>(k)] = {a[static_cast<size_t>(k)], b[static_cast<size_t>(k)]};
  out.push_back(s);
}

// json.dumps's escape of a code point below U+0020, '"' or '\'; empty for any other.
std::string json_escape(uint32_t c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      return c < 0x20 ? fmt::format("\\u{:04x}", c) : std::string();
  }
}

class NfaBuilder {
 public:
  explicit NfaBuilder(const Regex& regex, RegexText text) : regex_(regex), text_(text) {}

  // The NFA of the whole regex: start state 0, the returned state accepts.
  int32_t build() {
    const int32_t start = add();
    return emit(regex_.root, start);
  }
  std::vector<NfaState>& states() { return states_; }

 private:
  int32_t add() {
    CTXPAR_CHECK_INPUT(states_.size() < kMaxNfaStates,
                       "regex: the pattern is too large for ctxpar (its automaton passes {} "
                       "states; lower the repetition counts)",
                       kMaxNfaStates);
    states_.emplace_back();
    return static_cast<int32_t>(states_.size()) - 1;
  }
  void edge(int32_t from, uint8_t lo, uint8_t hi, int32_t to) {
    states_[static_cast<size_t>(from)].bytes.push_back({lo, hi, to});
  }
  void empty(int32_t from, int32_t to) { states_[static_cast<size_t>(from)].empty.push_back(to); }

  void sequence(int32_t from, const ByteSequence& s, int32_t end) {
    int32_t cur = from;
    for (int k = 0; k < s.length; ++k) {
      const int32_t to = k + 1 == s.length ? end : add();
      edge(cur, s.ranges[static_cast<size_t>(k)].first, s.ranges[static_cast<size_t>(k)].second,
           to);
      cur = to;
    }
  }

  int32_t emit_set(const CodePointSet& set, int32_t from) {
    const int32_t end = add();
    std::vector<ByteSequence> seqs;
    for (const CodePointRange& r : set) {
      if (text_ == RegexText::kRaw) {
        utf8_sequences(r.lo, r.hi, seqs);
        continue;
      }
      // JSON string content: the escaped code points one by one, the rest as raw ranges.
      uint32_t lo = r.lo;
      for (uint32_t c = r.lo; c <= std::min<uint32_t>(r.hi, 0x5C); ++c) {
        const std::string esc = json_escape(c);
        if (esc.empty()) continue;
        if (c > lo) utf8_sequences(lo, c - 1, seqs);
        lo = c + 1;
        int32_t cur = from;
        for (size_t k = 0; k < esc.size(); ++k) {
          const auto b = static_cast<uint8_t>(esc[k]);
          const int32_t to = k + 1 == esc.size() ? end : add();
          edge(cur, b, b, to);
          cur = to;
        }
      }
      if (lo <= r.hi) utf8_sequences(lo, r.hi, seqs);
    }
    for (const ByteSequence& s : seqs) sequence(from, s, end);
    return end;
  }

  int32_t emit(int32_t id, int32_t from) {
    const RegexNode& n = regex_.nodes[static_cast<size_t>(id)];
    switch (n.kind) {
      case RegexNode::Kind::kSet:
        return emit_set(n.set, from);
      case RegexNode::Kind::kConcat: {
        int32_t cur = from;
        for (const int32_t c : n.children) cur = emit(c, cur);
        return cur;
      }
      case RegexNode::Kind::kAlternation: {
        const int32_t end = add();
        for (const int32_t c : n.children) {
          const int32_t s = add();
          empty(from, s);
          empty(emit(c, s), end);
        }
        return end;
      }
      case RegexNode::Kind::kRepeat: {
        const int32_t child = n.children[0];
        int32_t cur = from;
        for (int32_t i = 0; i < n.min; ++i) cur = emit(child, cur);
        const int32_t end = add();
        if (n.max < 0) {  // star: loop through a fresh state
          const int32_t loop = add();
          empty(cur, loop);
          empty(emit(child, loop), loop);
          empty(loop, end);
          return end;
        }
        for (int32_t i = n.min; i < n.max; ++i) {  // optional copies, each may end the run
          empty(cur, end);
          cur = emit(child, cur);
        }
        empty(cur, end);
        return end;
      }
    }
    return from;
  }

  const Regex& regex_;
  RegexText text_;
  std::vector<NfaState> states_;
};

// `set` with every state reachable through empty edges, sorted.
void close_over_empty(const std::vector<NfaState>& nfa, std::vector<int32_t>& set,
                      std::vector<uint32_t>& seen, uint32_t stamp) {
  std::vector<int32_t> todo = set;
  set.clear();
  for (const int32_t s : todo) seen[static_cast<size_t>(s)] = stamp;
  while (!todo.empty()) {
    const int32_t s = todo.back();
    todo.pop_back();
    set.push_back(s);
    for (const int32_t t : nfa[static_cast<size_t>(s)].empty) {
      if (seen[static_cast<size_t>(t)] != stamp) {
        seen[static_cast<size_t>(t)] = stamp;
        todo.push_back(t);
      }
    }
  }
  std::sort(set.begin(), set.end());
}

}  // namespace

ByteDfa compile_byte_dfa(const Regex& regex, RegexText text) {
  NfaBuilder builder(regex, text);
  const int32_t accept = builder.build();
  const std::vector<NfaState>& nfa = builder.states();

  ByteDfa dfa;
  // Byte classes: a new class starts wherever some edge's range starts or ends.
  std::array<bool, 257> cut{};
  for (const NfaState& s : nfa) {
    for (const ByteEdge& e : s.bytes) {
      cut[e.lo] = true;
      cut[static_cast<size_t>(e.hi) + 1] = true;
    }
  }
  size_t classes = 0;
  for (size_t b = 0; b < 256; ++b) {
    if (b > 0 && cut[b]) ++classes;
    dfa.class_of_[b] = static_cast<uint8_t>(classes);
  }
  dfa.classes_ = classes + 1;
  const size_t max_states = std::min<size_t>(
      ByteDfa::kMaxStates, ByteDfa::kMaxTableBytes / (dfa.classes_ * sizeof(int32_t)));

  std::map<std::vector<int32_t>, int32_t> ids;
  std::vector<std::vector<int32_t>> sets;
  std::vector<uint32_t> seen(nfa.size(), 0);
  uint32_t stamp = 0;
  const auto intern = [&](std::vector<int32_t> set) {
    const auto [it, fresh] = ids.emplace(set, static_cast<int32_t>(sets.size()));
    if (fresh) {
      CTXPAR_CHECK_INPUT(sets.size() < max_states,
                         "regex: the pattern is too complex for ctxpar (its automaton passes {} "
                         "states)",
                         max_states);
      sets.push_back(std::move(set));
    }
    return it->second;
  };
  std::vector<int32_t> start{0};
  close_over_empty(nfa, start, seen, ++stamp);
  intern(std::move(start));

  // Subset construction; the work (NFA edges visited) is bounded so that no pattern holds a
  // request thread for long (~0.1 s at the bound).
  constexpr size_t kMaxWork = size_t{1} << 26;
  size_t work = 0;
  std::vector<std::vector<int32_t>> moves(dfa.classes_);
  for (size_t d = 0; d < sets.size(); ++d) {
    for (auto& m : moves) m.clear();
    for (const int32_t s : sets[d]) {
      for (const ByteEdge& e : nfa[static_cast<size_t>(s)].bytes) {
        for (size_t c = dfa.class_of_[e.lo]; c <= dfa.class_of_[e.hi]; ++c) {
          moves[c].push_back(e.to);
        }
      }
      work += nfa[static_cast<size_t>(s)].bytes.size() + nfa[static_cast<size_t>(s)].empty.size();
    }
    CTXPAR_CHECK_INPUT(work <= kMaxWork,
                       "regex: the pattern is too complex for ctxpar (building its automaton "
                       "takes too long; lower the repetition counts)");
    dfa.next_.resize((d + 1) * dfa.classes_, ByteDfa::kNone);
    dfa.accepting_.push_back(std::binary_search(sets[d].begin(), sets[d].end(), accept) ? 1 : 0);
    for (size_t c = 0; c < dfa.classes_; ++c) {
      std::vector<int32_t>& m = moves[c];
      if (m.empty()) continue;
      std::sort(m.begin(), m.end());
      m.erase(std::unique(m.begin(), m.end()), m.end());
      close_over_empty(nfa, m, seen, ++stamp);
      dfa.next_[d * dfa.classes_ + c] = intern(m);
    }
  }

  // Keep only the states from which a match can still be reached.
  const size_t n = sets.size();
  std::vector<std::vector<int32_t>> from(n);
  for (size_t d = 0; d < n; ++d) {
    for (size_t c = 0; c < dfa.classes_; ++c) {
      const int32_t t = dfa.next_[d * dfa.classes_ + c];
      if (t != ByteDfa::kNone) from[static_cast<size_t>(t)].push_back(static_cast<int32_t>(d));
    }
  }
  std::vector<uint8_t> alive(n, 0);
  std::vector<int32_t> todo;
  for (size_t d = 0; d < n; ++d) {
    if (dfa.accepting_[d] != 0) {
      alive[d] = 1;
      todo.push_back(static_cast<int32_t>(d));
    }
  }
  while (!todo.empty()) {
    const int32_t d = todo.back();
    todo.pop_back();
    for (const int32_t p : from[static_cast<size_t>(d)]) {
      if (alive[static_cast<size_t>(p)] == 0) {
        alive[static_cast<size_t>(p)] = 1;
        todo.push_back(p);
      }
    }
  }
  CTXPAR_CHECK_INPUT(alive[ByteDfa::kStart] != 0, "regex: the pattern matches no text");
  for (int32_t& t : dfa.next_) {
    if (t != ByteDfa::kNone && alive[static_cast<size_t>(t)] == 0) t = ByteDfa::kNone;
  }
  return dfa;
}

ByteDfa compile_regex(std::string_view pattern, RegexText text) {
  return compile_byte_dfa(parse_regex(pattern), text);
}

}  // namespace ctxpar::structured
