// Chat templates: the Jinja2 templates of Hugging Face tokenizer_config.json /
// chat_template.jinja, rendered exactly as transformers' apply_chat_template renders them
// (jinja2 ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
// {% generation %}, json.dumps-based tojson, raise_exception, strftime_now), which is what
// vLLM does for /v1/chat/completions.
//
// ctxpar renders the subset of Jinja2 real templates use (DESIGN.md §8); anything outside it
// fails when the template is parsed, with the file, line, column and the feature named.
#pragma once

#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ctxpar/tokenizer/chat_template/budget.h"

namespace ctxpar::chat_template {

struct RenderOptions {
  RenderLimits limits;
  // The local time strftime_now() formats; empty means the system clock in the process's
  // time zone (as HF's datetime.now()). Tests inject a fixed time.
  std::function<std::tm()> now;
};

class ChatTemplate {
 public:
  // Parses `source`. `origin` names the template in every error ("tokenizer_config.json",
  // "chat_template.jinja", "--chat-template"). Throws ctxpar::InputError "chat template
  // <origin>:<line>:<column>: ..." for a syntax error or an unsupported tag, filter or test.
  static ChatTemplate parse(std::string_view source, std::string origin);

  // Renders with the keys of `context` (a JSON object) as template variables. ordered_json
  // keeps key order, which tojson prints (nlohmann::json would sort keys). Throws
  // ctxpar::InputError: for a render error "chat template <origin>:<line>:<column>: <message>";
  // for raise_exception(message) in the template, exactly that message; past a limit of
  // options.limits, a message naming the limit. The template is not changed by rendering and
  // may be rendered from several threads at once.
  std::string render(const nlohmann::ordered_json& context,
                     const RenderOptions& options = {}) const;

  const std::string& origin() const;

  // Whether the template loops over a message's content, vLLM's test for giving it content as
  // a list of parts (content_loops.h).
  bool loops_over_message_content() const;

 private:
  struct Parsed;
  explicit ChatTemplate(std::shared_ptr<const Parsed> parsed) : parsed_(std::move(parsed)) {}
  std::shared_ptr<const Parsed> parsed_;
};

// One chat request, as vLLM hands it to the tokenizer's apply_chat_template.
struct ChatRequest {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  // null: the request had no tools (the template sees `tools` = none, not undefined).
  nlohmann::ordered_json tools = nullptr;
  nlohmann::ordered_json documents = nullptr;
  bool add_generation_prompt = false;
  // Leave the final (assistant) message open so the model continues it (vLLM/HF semantics).
  bool continue_final_message = false;
  // HF's special_tokens_map: bos_token, eos_token, unk_token, pad_token, ... (strings).
  nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object();
  // chat_template_kwargs (e.g. {"enable_thinking": false}); they override special tokens.
  nlohmann::ordered_json chat_template_kwargs = nlohmann::ordered_json::object();
};

// The template variables HF passes for `request`: messages, tools, documents,
// add_generation_prompt, then special_tokens, then chat_template_kwargs (later keys win).
nlohmann::ordered_json chat_template_context(const ChatRequest& request);

// transformers' apply_chat_template(..., tokenize=False). With continue_final_message the
// text ends right after the final message's content (HF marks the content, renders, and
// cuts at the mark). Throws ctxpar::InputError for continue_final_message together with
// add_generation_prompt, a final message without text, a template that drops the final
// message, and what render() throws.
std::string apply_chat_template(const ChatTemplate& chat_template, const ChatRequest& request,
                                const RenderOptions& options = {});

}  // namespace ctxpar::chat_template
