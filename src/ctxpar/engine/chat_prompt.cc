#include "ctxpar/engine/chat_prompt.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ctxpar/core/error.h"
#include "ctxpar/tokenizer/chat_template/deepseek_v32_encoder.h"

namespace ctxpar::engine {
namespace {

// The built-in models have a byte tokenizer and no template of their own: each message as
// "<|role|>\n" + content + "\n", then "<|assistant|>\n" for a generation prompt.
constexpr const char* kBuiltinTemplate =
    "{% for message in messages %}<|{{ message.role }}|>\n{{ message.content }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}";

// vLLM's --chat-template: a path when such a file exists, else the template text itself.
std::pair<std::string, std::string> flag_template(const std::string& flag) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(flag, ec)) {
    std::ifstream in(flag);
    CTXPAR_CHECK_INPUT(in.good(), "--chat-template {} cannot be read", flag);
    std::ostringstream text;
    text << in.rdbuf();
    return {text.str(), flag};
  }
  CTXPAR_CHECK_INPUT(flag.find("{{") != std::string::npos || flag.find("{%") != std::string::npos,
                     "--chat-template '{}' is neither a file nor a Jinja template (no {{{{ or "
                     "{{% in it)",
                     flag);
  return {flag, "--chat-template"};
}

}  // namespace

TokenizerMode parse_tokenizer_mode(std::string_view name) {
  if (name == "auto") return TokenizerMode::kAuto;
  if (name == "hf") return TokenizerMode::kHf;
  if (name == "deepseek_v32") return TokenizerMode::kDeepSeekV32;
  CTXPAR_INPUT_FAIL("--tokenizer-mode '{}' is not supported; use auto, hf or deepseek_v32", name);
}

ChatPrompt::ChatPrompt(const tokenizer::LoadedTokenizer& tokenizer, const model::ModelConfig& model,
                       const std::string& chat_template_flag, TokenizerMode mode) {
  for (const auto& [key, value] : {std::pair{"bos_token", tokenizer.bos_token},
                                   {"eos_token", tokenizer.eos_token},
                                   {"pad_token", tokenizer.pad_token},
                                   {"unk_token", tokenizer.unk_token}}) {
    if (value) special_tokens_[key] = *value;
  }
  if (mode == TokenizerMode::kDeepSeekV32) {
    deepseek_v32_encoder_ = true;
    return;
  }
  if (!chat_template_flag.empty()) {
    const auto [source, origin] = flag_template(chat_template_flag);
    default_template_ = chat_template::ChatTemplate::parse(source, origin);
    return;
  }
  if (const std::string* source = tokenizer.chat_template("default")) {
    default_template_ =
        chat_template::ChatTemplate::parse(*source, "the tokenizer's chat template");
  }
  if (const std::string* source = tokenizer.chat_template("tool_use")) {
    tool_template_ =
        chat_template::ChatTemplate::parse(*source, "the tokenizer's tool_use template");
  }
  if (default_template_ || tool_template_) return;
  if (model.arch == model::ModelArch::kDeepseekV32 && mode == TokenizerMode::kAuto) {
    deepseek_v32_encoder_ = true;
  } else if (model::is_builtin_model(model.source)) {
    builtin_ = true;
    default_template_ = chat_template::ChatTemplate::parse(kBuiltinTemplate, "built-in template");
  } else {
    missing_reason_ = fmt::format(
        "{} has no chat template (no chat_template in tokenizer_config.json and no "
        "chat_template.jinja); give one with --chat-template FILE",
        model.source);
  }
}

std::string ChatPrompt::render(chat_template::ChatRequest request,
                               const chat_template::ChatTemplate* request_template) const {
  for (const auto& [key, value] : special_tokens_.items()) {
    if (!request.special_tokens.contains(key)) request.special_tokens[key] = value;
  }
  if (deepseek_v32_encoder_) return chat_template::encode_deepseek_v32(request);
  const chat_template::ChatTemplate* t =
      request_template != nullptr
          ? request_template
          : template_for(request.tools.is_array() && !request.tools.empty());
  CTXPAR_CHECK_INPUT(t != nullptr, "{}", missing_reason_);
  return chat_template::apply_chat_template(*t, request);
}

const chat_template::ChatTemplate* ChatPrompt::template_for(bool has_tools) const {
  if (deepseek_v32_encoder_) return nullptr;
  if (has_tools && tool_template_) return &*tool_template_;
  if (default_template_) return &*default_template_;
  if (tool_template_) return &*tool_template_;
  return nullptr;
}

bool ChatPrompt::loops_over_message_content(
    bool has_tools, const chat_template::ChatTemplate* request_template) const {
  const chat_template::ChatTemplate* t = request_template != nullptr && !deepseek_v32_encoder_
                                             ? request_template
                                             : template_for(has_tools);
  return t != nullptr && t->loops_over_message_content();
}

bool ChatPrompt::keeps_inline_system() const {
  for (const bool has_tools : {false, true}) {
    const chat_template::ChatTemplate* t = template_for(has_tools);
    if (t == nullptr) return false;
    chat_template::ChatRequest request;
    for (const char* role : {"system", "user", "system", "user"})
      request.messages.push_back({{"role", role}, {"content", "t"}});
    request.special_tokens = special_tokens_;
    try {
      chat_template::apply_chat_template(*t, request);
    } catch (const std::exception&) {
      return false;
    }
  }
  return true;
}

}  // namespace ctxpar::engine
