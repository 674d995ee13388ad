// What a chat request's `tools` (OpenAI function tools: {"type": "function", "function":
// {"name", "parameters": JSON schema}}) say about a call's parameters, as vLLM's tool call
// parsers read them to type the argument text a model wrote. Entries that are not such tools
// are skipped; the first tool with the name counts.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

namespace ctxpar::server {

// The `parameters` schema of the first tool named `name`: null when there is none, or when the
// tool has no parameters.
const nlohmann::json* tool_parameters(const nlohmann::json& tools, std::string_view name);

// Whether the parameter `arg` of tool `name` is declared {"type": "string"} (vLLM's glm4_moe
// _is_string_type: a type list, or an unknown tool or parameter, is not).
bool is_string_parameter(const nlohmann::json& tools, std::string_view name, std::string_view arg);

}  // namespace ctxpar::server
