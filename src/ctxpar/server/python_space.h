// Python's whitespace in UTF-8 text: vLLM's tool call parsers strip names and values
// (str.strip(): str.isspace() characters) and skip whitespace between tags (the regex module's
// \s, which is the same set without the separators \x1c-\x1f), and the parsers here must cut
// the same text.
#pragma once

#include <cstddef>
#include <string_view>

namespace ctxpar::server {

enum class PySpace {
  kStrip,  // str.isspace(), what str.strip() removes
  kRegex,  // \s of vLLM's `regex` patterns
};

// The byte length of the whitespace character at text[i] (0 when there is none, at the end, or
// at a byte that does not start a well-formed character).
size_t python_space_at(std::string_view text, size_t i, PySpace kind = PySpace::kStrip);

// The first index from i on that is not whitespace.
size_t skip_python_space(std::string_view text, size_t i, PySpace kind = PySpace::kStrip);

// str.strip(): `text` without leading and trailing whitespace.
std::string_view python_strip_space(std::string_view text);

}  // namespace ctxpar::server
