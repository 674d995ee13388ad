#include "ctxpar/server/chat_format.h"

#include "ctxpar/server/openai_protocol.h"

namespace ctxpar::server {

std::string builtin_chat_prompt(const nlohmann::json& messages, bool add_generation_prompt,
                                bool continue_final_message) {
  std::string prompt;
  for (size_t i = 0; i < messages.size(); ++i) {
    prompt += "<|" + messages[i]["role"].get<std::string>() + "|>\n" + message_text(messages[i], i);
    if (!(continue_final_message && i + 1 == messages.size())) prompt += "\n";
  }
  if (add_generation_prompt) prompt += "<|assistant|>\n";
  return prompt;
}

}  // namespace ctxpar::server
