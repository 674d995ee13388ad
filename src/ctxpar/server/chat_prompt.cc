#include "ctxpar/server/chat_prompt.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ctxpar/core/error.h"
#include "ctxpar/server/api_error.h"
#include "ctxpar/tokenizer/chat_template/deepseek_v32_encoder.h"

namespace ctxpar::server {
namespace {

using nlohmann::ordered_json;

// ctxpar's template for models without one (the built-in models and their byte tokenizer).
constexpr std::string_view kPlainTemplate =
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}";

// vLLM's --chat-template: a path when it names a file, else the template itself.
std::string template_source(const std::string& flag, std::string& origin) {
  if (!std::filesystem::is_regular_file(flag)) {
    origin = "--chat-template";
    return flag;
  }
  std::ifstream in(flag);
  CTXPAR_CHECK_INPUT(in.good(), "--chat-template {} cannot be read", flag);
  std::stringstream text;
  text << in.rdbuf();
  origin = flag;
  return text.str();
}

}  // namespace

ChatPrompt::ChatPrompt(const tokenizer::LoadedTokenizer& tokenizer, model::ModelArch arch,
                       bool builtin_model, const std::string& chat_template) {
  if (!chat_template.empty()) {
    std::string origin;
    const std::string source = template_source(chat_template, origin);
    default_ = chat_template::ChatTemplate::parse(source, origin);
  } else if (const std::string* own = tokenizer.chat_template("default")) {
    default_ = chat_template::ChatTemplate::parse(*own, "the tokenizer's chat template");
    if (const std::string* tools = tokenizer.chat_template("tool_use")) {
      tool_use_ = chat_template::ChatTemplate::parse(*tools, "the tokenizer's tool_use template");
    }
  } else if (builtin_model) {
    default_ = chat_template::ChatTemplate::parse(kPlainTemplate, "ctxpar's plain template");
  } else {
    deepseek_v32_ = arch == model::ModelArch::kDeepseekV32;
  }
  special_tokens_ = ordered_json::object();
  const auto add = [&](const char* name, const std::optional<std::string>& token) {
    if (token) special_tokens_[name] = *token;
  };
  add("bos_token", tokenizer.bos_token);
  add("eos_token", tokenizer.eos_token);
  add("pad_token", tokenizer.pad_token);
  add("unk_token", tokenizer.unk_token);
}

std::string ChatPrompt::render(const ChatRequest& request) const {
  chat_template::ChatRequest r;
  for (size_t i = 0; i < request.messages.size(); ++i) {
    ordered_json m = ordered_json::parse(request.messages[i].dump());
    m["content"] = message_text(request.messages[i], i);
    r.messages.push_back(std::move(m));
  }
  if (!request.tools.is_null()) r.tools = ordered_json::parse(request.tools.dump());
  r.add_generation_prompt = request.add_generation_prompt;
  r.continue_final_message = request.continue_final_message;
  r.special_tokens = special_tokens_;
  if (!request.chat_template_kwargs.is_null()) {
    r.chat_template_kwargs = ordered_json::parse(request.chat_template_kwargs.dump());
  }
  try {
    if (deepseek_v32_) return chat_template::encode_deepseek_v32(r);
    const bool tools = !request.tools.is_null() && !request.tools.empty();
    const auto& chosen = tools && tool_use_ ? tool_use_ : default_;
    if (!chosen) {
      throw bad_request(
          "As of transformers v4.44, default chat template is no longer allowed, so you must "
          "provide a chat template if the tokenizer does not define one.");
    }
    return chat_template::apply_chat_template(*chosen, r);
  } catch (const InputError& e) {
    throw bad_request(e.what());
  }
}

}  // namespace ctxpar::server
