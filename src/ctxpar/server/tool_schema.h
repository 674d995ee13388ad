// What a chat request's `tools` (OpenAI function tools: {"type": "function", "function":
// {"name", "parameters": JSON schema}}) say about a call's parameters, as vLLM's tool call
// parsers read them to type the argument text a model wrote. Entries that are not such tools
// are skipped; the first tool with the name counts.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ctxpar::server {

// The `parameters` schema of the first tool named `name`: null when there is none, or when the
// tool has no parameters.
const nlohmann::json* tool_parameters(const nlohmann::json& tools, std::string_view name);

// Whether the parameter `arg` of tool `name` is declared {"type": "string"} (vLLM's glm4_moe
// _is_string_type: a type list, or an unknown tool or parameter, is not).
bool is_string_parameter(const nlohmann::json& tools, std::string_view name, std::string_view arg);

// The `properties` object of tool `name`'s parameters; an empty object when there is none
// (vLLM's find_tool_properties).
const nlohmann::json& tool_properties(const nlohmann::json& tools, std::string_view name);

// The JSON types a parameter schema allows (vLLM's extract_types_from_schema): its "type" (a
// string or a list), the types of its "enum" values, and those of its anyOf / oneOf / allOf
// choices; ["string"] when that gives none, or when the schema is not an object.
std::vector<std::string> schema_types(const nlohmann::json& schema);

// vLLM's coerce_to_schema_type: the value of parameter text `value` under `types` (aliases such
// as int, float, bool, dict, list taken, any case), trying null ("null", any case), integer
// (Python's int()), number (float(); a whole number as an int, inf and nan not taken), boolean
// (true/1, false/0, any case), object and array (finite JSON), string (the text), in that
// order; else finite JSON, else the text. Integers past 64 bits become floats.
nlohmann::ordered_json coerce_to_schema_type(std::string_view value,
                                             const std::vector<std::string>& types);

// The coerce_to_schema_type of vLLM 0.23, which qwen3coder_tool_parser.py calls: the same, except
// that JSON text is taken as Python's json.loads reads it, NaN and infinities included, and that
// for a number a text float() reads as infinite raises (int() of it: OverflowError), which is
// nullopt here (vLLM's parser then gives up on the output).
std::optional<nlohmann::ordered_json> legacy_coerce_to_schema_type(
    std::string_view value, const std::vector<std::string>& types);

}  // namespace ctxpar::server
