// What vLLM hands a chat template of a chat request (vllm/renderers): each message as its
// conversation message (chat_utils parse_chat_message_content), the tools as its
// ChatCompletionToolsParam dumps them, and assistant tool calls with their arguments parsed into
// objects (_postprocess_messages), in the client's key order. Templates print both: Qwen's write
// each tool with tojson, Llama 3.1's a call's arguments with tojson, GLM's and Qwen3-Coder's
// iterate the arguments' items.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

#include "ctxpar/server/chat_content_format.h"

namespace ctxpar::server {

// How Claude Code's attribution header starts: a system text vLLM drops (its per-request hash
// would defeat the prefix cache).
inline constexpr std::string_view kClaudeCodeBillingHeader = "x-anthropic-billing-header";

// Each tool as {"type", "function": {"name", "description" (null when absent), "parameters"
// (null when absent), "strict" and "defer_loading" when set}} (a tool-level defer_loading moves
// into the function unless it has one); other keys are dropped.
nlohmann::ordered_json template_tools(const nlohmann::ordered_json& tools);

// messages[index] as vLLM's parse_chat_message_content hands it to the template: role, the
// content in `format` (kString or kOpenAi; a system message without Claude Code's
// "x-anthropic-billing-header" line, a tool message's text parts joined with "\n" into a string),
// then tool_calls (assistant; parse_tool_call_arguments), reasoning and reasoning_content (an
// assistant's "reasoning"), tool_call_id (tool) and name; other keys are dropped. `message` is
// the checked message, `ordered` the same in the client's key order.
nlohmann::ordered_json template_message(const nlohmann::json& message,
                                        const nlohmann::ordered_json& ordered, size_t index,
                                        ChatContentFormat format);

// An assistant message's tool_calls (`message` is messages[index]): an empty list is dropped;
// each call's arguments become the object their JSON text holds, or {} when they are empty, not
// JSON or not an object (vLLM keeps such a conversation going). Throws ApiError 400 for a call
// that is not an object or not of type "function".
void parse_tool_call_arguments(nlohmann::ordered_json& message, size_t index);

}  // namespace ctxpar::server
