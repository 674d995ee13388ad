// Regular expressions as vLLM's default structured-output backend (xgrammar) reads them, for
// structured_outputs {"regex": ...} and a JSON schema string's "pattern": parsed into a tree whose
// leaves are sets of code points. Tokenizer- and byte-independent (byte_dfa.h encodes the sets).
//
// The syntax is Python's `re` without what a finite automaton cannot do; the meaning of the
// classes is xgrammar's:
//   - `.` is any code point, '\n' included (Python's DOTALL);
//   - \d is [0-9], \w [0-9A-Za-z_], \s [\t\n\v\f\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f
//     \u205f\u3000\ufeff]; \D, \W, \S their complements;
//   - the whole text must match: '^' at the start and '$' at the end are accepted and change
//     nothing; lazy and possessive quantifiers (`*?`, `++`) match what the plain ones do;
//   - `{` that does not begin a valid {m}, {m,}, {,n}, {m,n} or {,} is a literal, as in Python.
// Refused with ctxpar::InputError naming the construct and its offset in the pattern:
// backreferences, lookaround, word boundaries, inline flags, anchors anywhere else, unknown
// escapes, unbalanced parentheses or brackets, reversed ranges, and repetition counts above
// kMaxRepeat.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace ctxpar::structured {

struct CodePointRange {
  uint32_t lo = 0;  // inclusive
  uint32_t hi = 0;  // inclusive
  bool operator==(const CodePointRange&) const = default;
};
// Sorted, disjoint and not adjacent; surrogates (U+D800..U+DFFF) never appear.
using CodePointSet = std::vector<CodePointRange>;

struct RegexNode {
  enum class Kind : uint8_t {
    kSet,          // one code point of `set`
    kConcat,       // `children` in order (none: the empty text)
    kAlternation,  // one of `children`
    kRepeat,       // children[0], min to max times (max -1: unbounded)
  };
  Kind kind = Kind::kConcat;
  CodePointSet set;
  std::vector<int32_t> children;
  int32_t min = 0;
  int32_t max = -1;
};

struct Regex {
  std::vector<RegexNode> nodes;
  int32_t root = -1;
};

// Largest m or n in {m,n} (Python allows more; the automaton grows with the count).
constexpr int32_t kMaxRepeat = 1000;

// `pattern` is UTF-8. Throws ctxpar::InputError as described above.
Regex parse_regex(std::string_view pattern);

// The sorted, merged union of `ranges` (any order, overlaps allowed), surrogates removed.
CodePointSet normalize_set(std::vector<CodePointRange> ranges);
// Every code point (but the surrogates) not in `set` (normalized).
CodePointSet complement_set(const CodePointSet& set);

}  // namespace ctxpar::structured
