#include "ctxpar/server/pythonic_pattern.h"

#include <cstdint>
#include <vector>

#include "ctxpar/server/python_space.h"
#include "ctxpar/tokenizer/unicode.h"
#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::server {
namespace {

constexpr size_t npos = std::string_view::npos;

bool is_ascii_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// The "any text" inside a call may hold anything, other calls and brackets too, so which ')'
// ends a call is a choice, as for the regex's backtracking: matches_call_list_pattern follows every
// choice, left to right over positions.

// The end of a NAME or KEY of the pattern starting at i, or npos.
size_t pattern_name_end(std::string_view s, size_t i) {
  if (i >= s.size() || !is_ascii_letter(s[i])) return npos;
  size_t j = i + 1;
  while (j < s.size()) {
    size_t next = j;
    if (!tokenizer::unicode::is_word(tokenizer::utf8::decode(s, next))) break;
    j = next;
  }
  return j;
}

// Whether a whitespace character (the pattern's \s) ends exactly at p.
bool space_ends_at(std::string_view s, size_t p) {
  for (size_t len = 1; len <= 3 && len <= p; ++len) {
    if (python_space_at(s, p - len, PySpace::kRegex) == len) return true;
  }
  return false;
}

}  // namespace

bool matches_call_list_pattern(std::string_view s) {
  if (!s.starts_with('[')) return false;
  constexpr uint8_t kSeparated = 1, kLast = 2;  // the calls so far: all ','-separated; a last one
  std::vector<uint8_t> state(s.size() + 1, 0);
  state[1] = kSeparated;
  for (size_t i = 1; i < s.size(); ++i) {
    if ((state[i] & kLast) && s[i] == ']') return true;
    if (state[i] == 0) continue;
    const size_t name = pattern_name_end(s, i);
    if (name == npos || name >= s.size() || s[name] != '(') continue;
    const bool separated = (state[i] & kSeparated) != 0;
    // A ')' at p closes the call; `comma_ok`: it may be one of the ','-separated ones.
    const auto close_at = [&](size_t p, bool comma_ok) {
      state[skip_python_space(s, p + 1, PySpace::kRegex)] |= kLast;
      if (separated && comma_ok && p + 1 < s.size() && s[p + 1] == ',') {
        state[skip_python_space(s, p + 2, PySpace::kRegex)] |= kSeparated;
      }
    };
    const size_t args = name + 1;
    if (args < s.size() && s[args] == ')') close_at(args, true);
    const size_t key = pattern_name_end(s, args);
    if (key == npos || key >= s.size() || s[key] != '=') continue;
    for (size_t p = s.find(')', key + 1); p != npos; p = s.find(')', p + 1)) {
      close_at(p, p > key + 1 && (s[p - 1] == ',' || space_ends_at(s, p)));
    }
  }
  return false;
}

}  // namespace ctxpar::server
