// vLLM's hermes tool call parser (vllm/tool_parsers/hermes_tool_parser.py; Qwen2.5, Qwen3,
// Hermes) on the text of one call, the text between <tool_call> and </tool_call>: a JSON object
// {"name": ..., "arguments": {...}}, its arguments an object or a string that holds one.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "ctxpar/server/tool_call_parser.h"

namespace ctxpar::server {

// The call, or nullopt when `body` is not one (vLLM then takes the whole output as content).
std::optional<std::vector<ToolCall>> hermes_tool_call(std::string_view body);

}  // namespace ctxpar::server
