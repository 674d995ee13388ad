// ChatPrompt: which template a model gets and what it renders: ctxpar's plain template for the
// built-in models (with continue_final_message and string content parts), --chat-template as a
// file or as text, a tokenizer's tool_use template for requests with tools, vLLM's 400 for a
// model without a template, and template errors (raise_exception) as 400s.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "ctxpar/core/error.h"
#include "ctxpar/server/api_error.h"
#include "ctxpar/server/chat_prompt.h"

namespace ctxpar::server {
namespace {

using nlohmann::json;

ChatRequest chat(json messages, bool generation_prompt = true, bool continue_final = false) {
  ChatRequest r;
  r.messages = std::move(messages);
  r.add_generation_prompt = generation_prompt;
  r.continue_final_message = continue_final;
  return r;
}

std::string error_of(const ChatPrompt& p, const ChatRequest& r) {
  try {
    p.render(r);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    return e.what();
  }
  return "no error";
}

const json kConversation = json::array({{{"role", "system"}, {"content", "Be brief."}},
                                        {{"role", "user"}, {"content", "What is DCP?"}}});

TEST(ChatPrompt, BuiltinModelsUseThePlainTemplate) {
  const ChatPrompt p({}, model::ModelArch::kLlama, /*builtin_model=*/true, "");
  EXPECT_EQ(p.render(chat(kConversation)),
            "<|system|>\nBe brief.\n<|user|>\nWhat is DCP?\n<|assistant|>\n");
  EXPECT_EQ(p.render(chat(kConversation, false)),
            "<|system|>\nBe brief.\n<|user|>\nWhat is DCP?\n");
  // Text parts join with newlines; continue_final_message leaves the last message open.
  json open = kConversation;
  open.push_back({{"role", "assistant"},
                  {"content", json::array({{{"type", "text"}, {"text", "It"}},
                                           {{"type", "text"}, {"text", "shards"}}})}});
  EXPECT_EQ(p.render(chat(open, false, true)),
            "<|system|>\nBe brief.\n<|user|>\nWhat is DCP?\n<|assistant|>\nIt\nshards");
}

TEST(ChatPrompt, ChatTemplateFlagAsTextOrFile) {
  const std::string source =
      "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}|{% endfor %}"
      "{% if add_generation_prompt %}[assistant]{% endif %}";
  tokenizer::LoadedTokenizer tok;
  tok.bos_token = "<s>";
  const ChatPrompt inline_text(tok, model::ModelArch::kLlama, false, source);
  const std::string want = "<s>[system] Be brief.|[user] What is DCP?|[assistant]";
  EXPECT_EQ(inline_text.render(chat(kConversation)), want);
  const std::string path = ::testing::TempDir() + "ctxpar_chat_template_test.jinja";
  std::ofstream(path) << source;
  const ChatPrompt from_file(tok, model::ModelArch::kLlama, false, path);
  EXPECT_EQ(from_file.render(chat(kConversation)), want);
  std::remove(path.c_str());
  EXPECT_THROW(ChatPrompt(tok, model::ModelArch::kLlama, false, "{% if %}"), InputError);
}

TEST(ChatPrompt, ToolUseTemplateForRequestsWithTools) {
  tokenizer::LoadedTokenizer tok;
  tok.chat_templates = {{"default", "plain:{{ messages[0].content }}"},
                        {"tool_use", "tools:{{ tools | length }}:{{ messages[0].content }}"}};
  const ChatPrompt p(tok, model::ModelArch::kQwen2, false, "");
  ChatRequest r = chat(json::array({{{"role", "user"}, {"content", "hi"}}}));
  EXPECT_EQ(p.render(r), "plain:hi");
  r.tools = json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}});
  EXPECT_EQ(p.render(r), "tools:1:hi");
}

TEST(ChatPrompt, MissingTemplatesAndTemplateErrorsAreBadRequests) {
  const ChatPrompt none({}, model::ModelArch::kQwen2, false, "");
  EXPECT_NE(error_of(none, chat(kConversation)).find("you must provide a chat template"),
            std::string::npos);
  const ChatPrompt raising({}, model::ModelArch::kLlama, false,
                           "{% if messages[0].role != 'user' %}"
                           "{{ raise_exception('Conversations must start with the user') }}"
                           "{% endif %}ok");
  EXPECT_EQ(error_of(raising, chat(kConversation)), "Conversations must start with the user");
  EXPECT_EQ(raising.render(chat(json::array({{{"role", "user"}, {"content", "x"}}}))), "ok");
  // DeepSeek-V3.2 ships no template: its encoder renders the prompt.
  const ChatPrompt v32({}, model::ModelArch::kDeepseekV32, false, "");
  EXPECT_NE(v32.render(chat(kConversation)).find("What is DCP?"), std::string::npos);
}

}  // namespace
}  // namespace ctxpar::server
