// vLLM's pythonic tool call parser (vllm/tool_parsers/pythonic_tool_parser.py, the same from
// vLLM 0.23 to 0.33; Llama 3.2, Llama 4): the whole output is a Python list of calls,
//
//   [get_weather(city="Paris", days=3), tools.now()]
//
// As vLLM reads it: the output must start with what its pattern takes (a '[', then calls whose
// name begins with an ASCII letter, each `NAME()` or `NAME(KEY=...)`, separated by ',', up to a
// ')' and ']'), and Python's ast.parse of the whole output must give, as its first statement, a
// list whose elements are all calls of a name or dotted name (a.b.c). A call's keyword values
// become its arguments (json.dumps of them in order; `**{...}` is the key "null"); its positional
// arguments are ignored. A value must be a literal Python writes without an operator: a number,
// a string, True / False / None, the names true / false / null, and lists and dicts of them
// (dict keys constants), parentheses around any of them. Anything else (a negative number is an
// operator, a tuple, a name, bytes, a complex number, an f-string) makes the whole output content,
// and so does an output that is not such a list. With calls the content is null.
//
// Differences from vLLM, on outputs a model hardly writes (each ends as content here, where vLLM
// finds calls): more Python statements after the list (`[f()]\nx = 1`); identifiers outside ASCII;
// positional arguments other than literals and (dotted) names; `*args`. Dict keys json.dumps writes
// alike (1 and "1") are one key here, two in vLLM's text; integers past 64 bits become floats.
#pragma once

#include <string_view>

#include "ctxpar/server/tool_call_parser.h"

namespace ctxpar::server {

ToolCallSplit split_pythonic(std::string_view text);

}  // namespace ctxpar::server
