// The JSON text Python's json.dumps(value, ensure_ascii=False) writes: ", " between items and
// ": " after keys, keys in the value's order, non-ASCII text as it is, floats as repr() writes
// them (1.0, 1e+16, NaN, Infinity). vLLM's tool call parsers give a call's arguments in this
// form, and clients that compare the text see the same bytes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace ctxpar::server {

// ensure_ascii: json.dumps' default, every non-ASCII character as a lowercase \uXXXX escape.
std::string python_json_text(const nlohmann::ordered_json& value, bool ensure_ascii = false);

}  // namespace ctxpar::server
