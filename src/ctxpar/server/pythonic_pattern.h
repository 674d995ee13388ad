// The first check of vLLM's pythonic tool call parser: a regex the start of the output must
// match before Python parses it (pythonic_tool_calls.h), here as the language that regex takes.
#pragma once

#include <string_view>

namespace ctxpar::server {

// Whether `text` starts with '[', then calls `NAME()` or `NAME(KEY=` + any text + `)` (NAME and
// KEY: an ASCII letter, then word characters), the ones before the last run each followed by ','
// and whitespace (such a call with a KEY has a ',' or a space right before its ')'), then one or
// more calls each followed by whitespace, and a ']'. What follows the ']' is not looked at.
bool matches_call_list_pattern(std::string_view text);

}  // namespace ctxpar::server
