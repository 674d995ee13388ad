// Python's ast.literal_eval(text) for the tool call parsers that fall back on it (vLLM's glm45
// and glm47 type an argument that is not a string parameter with json.loads, else
// ast.literal_eval, else keep the text), and what json.dumps then makes of the value.
//
// The literals: None, True, False, numbers (ints with _ separators, 0x / 0o / 0b, floats,
// a sign, complex), strings and bytes with their prefixes, escapes, triple quotes and implicit
// concatenation, tuples (also a bare `1, 2`), lists, dicts, sets and set(), Ellipsis, comments
// and line continuations, nesting up to Python's 200 brackets. Differences from Python, all on
// values a tool call hardly holds: integers past 64 bits become floats; \N{name} escapes are
// not taken (the text stays a string); an int key and an equal bool or float key stay two keys.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace ctxpar::server {

struct PythonLiteral {
  enum class Kind {
    kNotLiteral,  // literal_eval raises ValueError or SyntaxError
    kJson,        // `value` is what json.dumps writes (a tuple is a list, keys are strings)
    kNotJson,     // a literal json.dumps refuses (set, bytes, complex, Ellipsis, tuple key)
  };
  Kind kind = Kind::kNotLiteral;
  nlohmann::ordered_json value;
};

PythonLiteral eval_python_literal(std::string_view text);

}  // namespace ctxpar::server
