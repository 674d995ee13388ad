// JsonAutomaton: the byte-level pushdown automaton of a Grammar. It accepts exactly the bytes of
// JSON texts the grammar allows, with xgrammar's whitespace: with Grammar::any_whitespace
// (vLLM's default) any run of ' ', '\n', '\t' after '{', '[', ':', ',' and before ':', ',',
// '}', ']'; without it (vLLM's disable_any_whitespace) exactly one space after ':' and ',' and
// none elsewhere; never any before or after the top-level value. Strings must be valid UTF-8
// without raw control characters; \uXXXX escapes may be lone surrogates (JSON and Python allow
// them); lengths count code points as Python's len() (an escaped surrogate pair is one).
//
// A state is a set of stacks (unions make the automaton nondeterministic: one stack per way
// the bytes so far can be read). Every state the automaton reaches can still be completed to a
// whole document, so a byte is refused as soon as no completion is possible (the token masks
// rely on it: a masked generation never gets stuck).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "ctxpar/engine/structured/grammar.h"

namespace ctxpar::structured {

// Inside a string (a value or an object key).
struct StringScan {
  uint8_t state = 0;  // see json_automaton.cc
  uint8_t need = 0;   // UTF-8 continuation bytes still expected
  uint8_t lo = 0x80;  // the next continuation byte's allowed range
  uint8_t hi = 0xBF;
  uint8_t hex_left = 0;  // hex digits left in a \u escape
  bool high = false;     // the previous character was an escaped high surrogate
  uint16_t hex = 0;      // the \u escape's value so far
  bool operator==(const StringScan&) const = default;
};

// One level of a stack: a value being read.
struct Frame {
  int32_t node = 0;  // a concrete node of the grammar
  uint8_t phase = 0;
  bool negative = false;    // numbers: a leading '-'
  bool additional = false;  // objects: undeclared properties started
  bool spaced = false;      // compact whitespace: the one space after ':' or ',' was read
  StringScan scan;          // strings, and object keys
  int32_t count = 0;        // strings: code points; arrays: items; objects: properties
  int32_t pos = 0;          // literals: bytes matched; numbers: integer digits; keys: key bytes;
                            // regexes and patterned strings: the ByteDfa state
  int32_t last = -1;        // objects: the last declared property read
  int32_t key_lo = 0;       // objects: the range of by_key whose keys begin with the key so far
  int32_t key_hi = 0;
  int32_t pending = -1;  // objects: the property whose value comes next (-2: an undeclared one)
  int64_t value = 0;     // integers: the magnitude so far
  bool operator==(const Frame&) const = default;
};

// A set of stacks, flat: stack i is frames[ends[i - 1], ends[i]) (bottom first). An empty stack
// is a finished document.
struct StateSet {
  std::vector<Frame> frames;
  std::vector<uint32_t> ends;
  size_t size() const { return ends.size(); }
  bool empty() const { return ends.empty(); }
  std::span<const Frame> stack(size_t i) const {
    const uint32_t b = i == 0 ? 0 : ends[i - 1];
    return std::span(frames).subspan(b, ends[i] - b);
  }
  void clear() {
    frames.clear();
    ends.clear();
  }
};

class JsonAutomaton {
 public:
  explicit JsonAutomaton(std::shared_ptr<const Grammar> grammar);

  // The state before any byte.
  StateSet initial() const;
  // `out` = the state after byte b from `in` (out is cleared first, must not alias in). Returns
  // false (out empty) when no stack accepts b.
  bool advance(const StateSet& in, uint8_t b, StateSet& out) const;
  // The bytes so far are a whole document (the stop token may come now).
  bool can_end(const StateSet& state) const;
  // A whole document that no byte can continue (only the stop token may come).
  bool must_end(const StateSet& state) const;

  // One way of reading only, inside a string value, between characters: how many more
  // characters the string may take (INT64_MAX without maxLength); nullopt in any other state.
  // There, plain string bytes may come whatever else is on the stack (token masks take a
  // shortcut).
  std::optional<int64_t> string_room(const StateSet& state) const;

  // One way of reading only, inside a regex (the root of a regex grammar) or inside the content
  // of a patterned string: the DFA and its state. There the bytes the DFA takes are exactly the
  // bytes the automaton takes, but for a string's closing '"' (when the DFA accepts), after
  // which the rest of the stack reads on (token masks walk the DFA alone until then).
  struct RegexAt {
    const ByteDfa* dfa = nullptr;
    int32_t state = 0;
    bool in_string = false;
  };
  std::optional<RegexAt> regex_at(const StateSet& state) const;

  const Grammar& grammar() const { return *grammar_; }

 private:
  void child_done(std::vector<Frame>& stack) const;
  void run(std::vector<Frame>& stack, uint8_t b, StateSet& out) const;
  static void push(StateSet& out, std::span<const Frame> stack);
  Frame open(int32_t node) const;

  std::shared_ptr<const Grammar> grammar_;
};

}  // namespace ctxpar::structured
