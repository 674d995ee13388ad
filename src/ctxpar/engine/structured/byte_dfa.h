// ByteDfa: a parsed regex (regex_parser.h) as a deterministic automaton over UTF-8 bytes, for the
// byte-level matcher (json_automaton.h). Every state it can reach can still end in a match: a
// byte after which no match is possible has no transition, so token masks never lead a
// generation into a dead end.
//
// Two encodings of the matched text:
//   - kRaw: the text itself, as UTF-8 (structured_outputs {"regex": ...});
//   - kJsonString: the text as it appears between the quotes of a JSON string (a schema's
//     "pattern"): every code point as json.dumps(..., ensure_ascii=False) writes it: '"' as \",
//     '\' as \\, \b \f \n \r \t for those controls, \u00xx (lowercase) for the other controls
//     below U+0020, anything else as its UTF-8 bytes. xgrammar instead drops '"', '\' and the
//     controls from classes and writes a literal control character raw, which is not JSON.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "ctxpar/engine/structured/regex_parser.h"

namespace ctxpar::structured {

enum class RegexText : uint8_t { kRaw, kJsonString };

class ByteDfa {
 public:
  static constexpr int32_t kStart = 0;
  static constexpr int32_t kNone = -1;
  // Larger automata are refused as "too complex": more states than this, or a transition table
  // (states x byte classes x 4 bytes) above kMaxTableBytes. `.{0,1000}` takes ~9,000 states
  // (a UTF-8 character is up to four bytes) of ~12 classes.
  static constexpr int32_t kMaxStates = 1 << 16;
  static constexpr size_t kMaxTableBytes = size_t{16} << 20;

  // The state after byte b from `state`, or kNone.
  int32_t next(int32_t state, uint8_t b) const {
    return next_[static_cast<size_t>(state) * classes_ + class_of_[b]];
  }
  // The bytes read so far are a whole match.
  bool accepting(int32_t state) const { return accepting_[static_cast<size_t>(state)] != 0; }
  int32_t size() const { return static_cast<int32_t>(accepting_.size()); }

 private:
  friend ByteDfa compile_byte_dfa(const Regex&, RegexText);
  // Bytes no transition tells apart share a class: [256] class of each byte.
  std::array<uint8_t, 256> class_of_{};
  size_t classes_ = 1;
  std::vector<int32_t> next_;  // [size() * classes_]
  std::vector<uint8_t> accepting_;
};

// Throws ctxpar::InputError when the regex matches nothing (in this encoding: an empty class)
// or needs more than kMaxStates states.
ByteDfa compile_byte_dfa(const Regex& regex, RegexText text);

// parse_regex + compile_byte_dfa.
ByteDfa compile_regex(std::string_view pattern, RegexText text);

}  // namespace ctxpar::structured
