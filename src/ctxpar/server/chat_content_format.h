// vLLM's --chat-template-content-format: how a chat message's content reaches the chat template
// (vllm/entrypoints/chat_utils.py):
//   string  text: a list of text parts joined with "\n", null content as "";
//   openai  a list of {"type": "text", "text": ...} parts: a string is one part, null none;
//   auto    (the default) openai for a template that loops over a message's content
//           (ChatPrompt::loops_over_message_content), else string.
// ctxpar takes text parts only (openai_protocol.h), so the parts are text parts.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

namespace ctxpar::server {

enum class ChatContentFormat { kAuto, kString, kOpenAi };

// "auto", "string", "openai". Throws InputError naming the value and the valid ones.
ChatContentFormat parse_chat_content_format(std::string_view name);

// The content the template sees for `message` (messages[index]) in `format`, kString or kOpenAi.
// Throws ApiError (400) for content that is not text (as message_text).
nlohmann::ordered_json template_content(const nlohmann::json& message, size_t index,
                                        ChatContentFormat format);

}  // namespace ctxpar::server
