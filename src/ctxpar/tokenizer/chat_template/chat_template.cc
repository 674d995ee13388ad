#include "ctxpar/tokenizer/chat_template/chat_template.h"

#include "ctxpar/core/error.h"
#include "ctxpar/tokenizer/chat_template/content_loops.h"
#include "ctxpar/tokenizer/chat_template/interpreter.h"
#include "ctxpar/tokenizer/chat_template/json_io.h"
#include "ctxpar/tokenizer/chat_template/lexer.h"
#include "ctxpar/tokenizer/chat_template/parser.h"
#include "ctxpar/tokenizer/chat_template/python_text.h"

namespace ctxpar::chat_template {

struct ChatTemplate::Parsed {
  std::string origin;
  std::string source;  // normalized; the SourceMap and tokens refer to it
  SourceMap map;
  Body body;

  Parsed(std::string o, std::string s) : origin(o), source(std::move(s)), map(o, source) {}
};

ChatTemplate ChatTemplate::parse(std::string_view source, std::string origin) {
  auto parsed = std::make_shared<Parsed>(std::move(origin), normalize_template_source(source));
  const std::vector<Token> tokens = tokenize_template(parsed->source, parsed->map);
  parsed->body = parse_template(tokens, parsed->map);
  return ChatTemplate(std::move(parsed));
}

const std::string& ChatTemplate::origin() const {
  return parsed_->origin;
}

bool ChatTemplate::loops_over_message_content() const {
  return chat_template::loops_over_message_content(parsed_->body);
}

namespace {

std::tm local_now() {
  const std::time_t t = std::time(nullptr);
  std::tm out{};
  localtime_r(&t, &out);
  return out;
}

}  // namespace

std::string ChatTemplate::render(const nlohmann::ordered_json& context,
                                 const RenderOptions& options) const {
  CTXPAR_CHECK_INPUT(context.is_object(),
                     "chat template {}: the render context must be a JSON object, "
                     "got {}",
                     parsed_->origin, context.type_name());
  const Value root = value_from_json(context);
  const Clock clock = options.now ? options.now : Clock(local_now);
  return render_body(parsed_->body, parsed_->map, root.as_dict(), options.limits, clock);
}

nlohmann::ordered_json chat_template_context(const ChatRequest& request) {
  CTXPAR_CHECK_INPUT(request.messages.is_array(), "chat request: messages must be an array, got {}",
                     request.messages.type_name());
  CTXPAR_CHECK_INPUT(request.special_tokens.is_object() && request.chat_template_kwargs.is_object(),
                     "chat request: special_tokens and chat_template_kwargs must be JSON objects");
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = request.messages;
  context["tools"] = request.tools;
  context["documents"] = request.documents;
  context["add_generation_prompt"] = request.add_generation_prompt;
  for (const auto& [k, v] : request.special_tokens.items()) context[k] = v;
  for (const auto& [k, v] : request.chat_template_kwargs.items()) context[k] = v;
  return context;
}

std::string apply_chat_template(const ChatTemplate& chat_template, const ChatRequest& request,
                                const RenderOptions& options) {
  if (!request.continue_final_message) {
    return chat_template.render(chat_template_context(request), options);
  }
  // HF (transformers 4.57): append a tag to the final message's text, render, cut at the tag.
  CTXPAR_CHECK_INPUT(
      !request.add_generation_prompt,
      "continue_final_message and add_generation_prompt are not compatible. Use "
      "continue_final_message when you want the model to continue the final message, "
      "and add_generation_prompt when you want to add a header that will prompt it to "
      "start a new assistant message instead.");
  CTXPAR_CHECK_INPUT(request.messages.is_array() && !request.messages.empty(),
                     "continue_final_message is set but there are no messages");
  static const std::string kTag = "CONTINUE_FINAL_MESSAGE_TAG ";
  ChatRequest tagged = request;
  nlohmann::ordered_json& content = tagged.messages.back()["content"];
  std::string final_text;
  if (content.is_array()) {
    nlohmann::ordered_json* block = nullptr;
    for (auto it = content.rbegin(); it != content.rend() && !block; ++it) {
      if (it->is_object() && it->contains("text")) block = &*it;
    }
    CTXPAR_CHECK_INPUT(
        block && (*block)["text"].is_string(),
        "continue_final_message is set but we could not find any text to continue in "
        "the final message!");
    final_text = (*block)["text"].get<std::string>();
    (*block)["text"] = final_text + kTag;
  } else {
    CTXPAR_CHECK_INPUT(
        content.is_string(),
        "continue_final_message is set but the final message's content is {}, not text",
        content.type_name());
    final_text = content.get<std::string>();
    content = final_text + kTag;
  }
  std::string rendered = chat_template.render(chat_template_context(tagged), options);
  const std::string stripped_final = python_strip(final_text, nullptr, StripSide::kBoth);
  const std::string stripped_tag = python_strip(kTag, nullptr, StripSide::kBoth);
  const size_t tag_pos = rendered.rfind(stripped_tag);
  CTXPAR_CHECK_INPUT(
      rendered.find(stripped_final) != std::string::npos && tag_pos != std::string::npos,
      "continue_final_message is set but the final message does not appear in the chat "
      "after applying the chat template! This can happen if the chat template deletes "
      "portions of the final message. Please verify the chat template and final "
      "message in your chat to ensure they are compatible.");
  if (rendered.compare(tag_pos, kTag.size(), kTag) == 0) {
    rendered.resize(tag_pos);  // the template kept the tag's trailing space
    return rendered;
  }
  return python_strip(rendered.substr(0, tag_pos), nullptr, StripSide::kRight);
}

}  // namespace ctxpar::chat_template
