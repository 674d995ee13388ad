// The chat prompt of an engine's model, chosen the way vLLM chooses it: --chat-template (a
// file or the template text itself) first; else the tokenizer's own template ("tool_use"
// when the request has tools and the tokenizer names one, else "default"); else, for
// DeepseekV32ForCausalLM, DeepSeek-V3.2's encoder (the model ships no Jinja template); else,
// for the built-in models, a plain role-tagged template. Any other model is an InputError
// that names --chat-template.
//
// --tokenizer-mode changes the choice as vLLM's does: deepseek_v32 is DeepSeek-V3.2's encoder
// for any model, whatever templates there are (vLLM's DeepseekV32Tokenizer wraps the model's
// tokenizer and encodes every chat with encoding_dsv32, ignoring chat templates); hf never
// uses the encoder (a DeepseekV32ForCausalLM without a template then has none). auto is the
// order above. (vLLM's auto turns into deepseek_v32 for DeepseekV32ForCausalLM, so there the
// encoder wins over --chat-template too; here --chat-template still does.)
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ctxpar/model/model_config.h"
#include "ctxpar/tokenizer/chat_template/chat_template.h"
#include "ctxpar/tokenizer/tokenizer_files.h"

namespace ctxpar::engine {

enum class TokenizerMode { kAuto, kHf, kDeepSeekV32 };

// --tokenizer-mode: "auto", "hf", "deepseek_v32". vLLM's other modes (slow, mistral, custom,
// deepseek_v4, ...) are an InputError naming the value and the valid ones.
TokenizerMode parse_tokenizer_mode(std::string_view name);

class ChatPrompt {
 public:
  // chat_template_flag: --chat-template ("" for none): a path to a file, or Jinja text.
  // Parses every template it may use now, so a template ctxpar cannot render fails at
  // start-up (InputError naming its origin, line and column), not at the first request.
  ChatPrompt(const tokenizer::LoadedTokenizer& tokenizer, const model::ModelConfig& model,
             const std::string& chat_template_flag, TokenizerMode mode = TokenizerMode::kAuto);

  // The prompt text for `request`; its special_tokens default to the tokenizer's (bos_token,
  // eos_token, pad_token, unk_token). Throws InputError when the model has no chat template
  // (naming --chat-template) or the template refuses the conversation (its message).
  // request_template: a request's own chat_template (vLLM's, under
  // --trust-request-chat-template), which replaces the model's; DeepSeek-V3.2's encoder ignores
  // it, as vLLM's tokenizer of that mode ignores every template.
  std::string render(chat_template::ChatRequest request,
                     const chat_template::ChatTemplate* request_template = nullptr) const;

  // Whether the template a request with (or without) tools gets loops over a message's content:
  // vLLM's test for giving messages list-of-parts content under --chat-template-content-format
  // auto. False without a Jinja template (DeepSeek-V3.2's encoder, or none).
  bool loops_over_message_content(
      bool has_tools, const chat_template::ChatTemplate* request_template = nullptr) const;

  // Whether system messages after the first render where they stand: vLLM's probe for
  // /v1/messages, a [system, user, system, user] conversation that the template (with and
  // without tools) renders without an error. False without a Jinja template (DeepSeek-V3.2's
  // encoder writes a later system message after the generation prompt; vLLM merges there).
  bool keeps_inline_system() const;

  // Whether to tokenize a rendered prompt with add_special_tokens. A model's own template
  // writes BOS itself, so vLLM tokenizes chat prompts without; the built-in models' plain
  // template does not, so their BOS is added.
  bool tokenize_with_special_tokens() const { return builtin_; }

 private:
  // The template a request with (or without) tools renders with; null when there is none.
  const chat_template::ChatTemplate* template_for(bool has_tools) const;

  std::optional<chat_template::ChatTemplate> default_template_, tool_template_;
  bool deepseek_v32_encoder_ = false;
  bool builtin_ = false;
  std::string missing_reason_;  // why there is none, when there is none
  nlohmann::ordered_json special_tokens_ = nlohmann::ordered_json::object();
};

}  // namespace ctxpar::engine
