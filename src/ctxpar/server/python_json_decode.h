// Python's json.JSONDecoder().raw_decode(text[at:]) (the C scanner, strict): the JSON value that
// starts exactly at `at` and where it ends; what follows it is not looked at. vLLM's llama3_json
// tool call parser reads each `{` of an output this way.
//
// As Python reads JSON: NaN, Infinity and -Infinity are numbers; a control character inside a
// string is an error; a repeated key keeps its first place and takes the last value; a number
// with a fraction or an exponent is a float (1e400 is inf), one without is an int. Differences
// from Python, on values a tool call hardly holds: integers past 64 bits become floats; a \u
// escape of a lone surrogate is refused (Python keeps it in the str, and json.dumps cannot then
// write UTF-8); nesting deeper than 900 brackets is refused (Python's limit is its recursion
// limit, about as deep).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

namespace ctxpar::server {

struct PythonJsonValue {
  enum class Status {
    kOk,          // `value` ends at `end`
    kInvalid,     // raw_decode raises JSONDecodeError, whatever text follows
    kIncomplete,  // the text ends inside a string, array or object that more text could finish
  };
  Status status = Status::kInvalid;
  nlohmann::ordered_json value;
  size_t end = 0;  // index just past the value (kOk)
};

// A number or literal at the very end of `text` outside any bracket is read as it stands (kOk),
// as raw_decode reads it; inside brackets the end of the text is kIncomplete.
PythonJsonValue python_json_raw_decode(std::string_view text, size_t at);

// json.loads(text): one value, JSON whitespace around it; nullopt where Python raises.
std::optional<nlohmann::ordered_json> python_json_loads(std::string_view text);

}  // namespace ctxpar::server
