#include "ctxpar/server/chat_content_format.h"

#include "ctxpar/core/error.h"
#include "ctxpar/server/openai_protocol.h"

namespace ctxpar::server {

ChatContentFormat parse_chat_content_format(std::string_view name) {
  if (name == "auto") return ChatContentFormat::kAuto;
  if (name == "string") return ChatContentFormat::kString;
  if (name == "openai") return ChatContentFormat::kOpenAi;
  CTXPAR_INPUT_FAIL(
      "--chat-template-content-format '{}' is not supported; use auto, string or openai", name);
}

nlohmann::ordered_json template_content(const nlohmann::json& message, size_t index,
                                        ChatContentFormat format) {
  const std::string text = message_text(message, index);  // checks the content
  if (format != ChatContentFormat::kOpenAi) return text;
  using ordered_json = nlohmann::ordered_json;
  const auto part = [](const std::string& t) {
    return ordered_json{{"type", "text"}, {"text", t}};
  };
  ordered_json parts = ordered_json::array();
  const auto it = message.find("content");
  if (it == message.end() || it->is_null()) return parts;
  if (it->is_string()) {
    parts.push_back(part(it->get<std::string>()));
    return parts;
  }
  for (const nlohmann::json& p : *it) parts.push_back(part(p["text"].get<std::string>()));
  return parts;
}

}  // namespace ctxpar::server
