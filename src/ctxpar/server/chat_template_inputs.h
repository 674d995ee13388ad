// What vLLM hands a chat template of a chat request besides the message content
// (vllm/renderers): the tools as its ChatCompletionToolsParam dumps them, and assistant tool calls
// with their arguments parsed into objects (chat_utils _postprocess_messages), in the client's key
// order. Templates print both: Qwen's write each tool with tojson, Llama 3.1's a call's arguments
// with tojson, GLM's and Qwen3-Coder's iterate the arguments' items.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>

namespace ctxpar::server {

// Each tool as {"type", "function": {"name", "description" (null when absent), "parameters"
// (null when absent), "strict" and "defer_loading" when set}} (a tool-level defer_loading moves
// into the function unless it has one); other keys are dropped.
nlohmann::ordered_json template_tools(const nlohmann::ordered_json& tools);

// An assistant message's tool_calls (`message` is messages[index]): an empty list is dropped;
// each call's arguments become the object their JSON text holds, or {} when they are empty, not
// JSON or not an object (vLLM keeps such a conversation going). Throws ApiError 400 for a call
// that is not an object or not of type "function".
void parse_tool_call_arguments(nlohmann::ordered_json& message, size_t index);

}  // namespace ctxpar::server
