// ChatPrompt: how /v1/chat/completions turns messages into the prompt text, as vLLM does: the
// chat template rendered the way transformers' apply_chat_template renders it
// (tokenizer::chat_template), with messages in vLLM's "string" content format (text parts
// joined by newlines), the request's tools, add_generation_prompt / continue_final_message,
// chat_template_kwargs and the tokenizer's special tokens.
//
// Which template: --chat-template (a file, else the template text itself); else the
// tokenizer's own ("tool_use" for a request with tools when it has one, else "default");
// else, for DeepSeek-V3.2 (which ships no template), its encoder; the built-in byte-tokenizer
// models use ctxpar's plain template, "<|role|>\n" + content + "\n" per message and
// "<|assistant|>\n" for the generation prompt.
#pragma once

#include <optional>
#include <string>

#include "ctxpar/model/model_config.h"
#include "ctxpar/server/openai_protocol.h"
#include "ctxpar/tokenizer/chat_template/chat_template.h"
#include "ctxpar/tokenizer/tokenizer_files.h"

namespace ctxpar::server {

class ChatPrompt {
 public:
  // `tokenizer` is the model's (engine::load_tokenizer); `chat_template` is --chat-template
  // ("" for none). Throws ctxpar::InputError for a template that does not parse or a
  // --chat-template file that cannot be read.
  ChatPrompt(const tokenizer::LoadedTokenizer& tokenizer, model::ModelArch arch, bool builtin_model,
             const std::string& chat_template);

  // The prompt of `request`. Throws ApiError 400 when the model has no template (vLLM's
  // message) or rendering fails (the template's message, e.g. its raise_exception).
  std::string render(const ChatRequest& request) const;

 private:
  std::optional<chat_template::ChatTemplate> default_;
  std::optional<chat_template::ChatTemplate> tool_use_;
  bool deepseek_v32_ = false;
  nlohmann::ordered_json special_tokens_;
};

}  // namespace ctxpar::server
