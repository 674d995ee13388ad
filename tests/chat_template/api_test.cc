// The ChatTemplate / apply_chat_template API: the variables HF passes, continue_final_message,
// the clock, and rendering one template from several threads.
#include <gtest/gtest.h>

#include <thread>

#include "chat_template/fixtures.h"
#include "ctxpar/core/error.h"

namespace ctxpar::chat_template {
namespace {

using json = nlohmann::ordered_json;

ChatTemplate parse(const std::string& source) {
  return ChatTemplate::parse(source, "api.jinja");
}

TEST(ChatTemplateApi, ContextHoldsWhatHfPasses) {
  ChatRequest r;
  r.messages = json::array({{{"role", "user"}, {"content", "hi"}}});
  r.special_tokens = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  r.chat_template_kwargs = {{"enable_thinking", false}, {"eos_token", "<override>"}};
  const json ctx = chat_template_context(r);
  std::vector<std::string> keys;
  for (const auto& [k, v] : ctx.items()) keys.push_back(k);
  EXPECT_EQ(keys,
            (std::vector<std::string>{"messages", "tools", "documents", "add_generation_prompt",
                                      "bos_token", "eos_token", "enable_thinking"}));
  EXPECT_EQ(ctx["eos_token"], "<override>");  // kwargs win over special tokens
  // No tools: `tools` is none, not undefined (templates test `tools is not none`).
  EXPECT_EQ(apply_chat_template(parse("{{ tools is defined }} {{ tools is none }} {{ bos_token }}"
                                      "{{ enable_thinking }}"),
                                r),
            "True True <s>False");
}

TEST(ChatTemplateApi, KeyOrderReachesTojson) {
  const json tool = json::parse(R"({"z": 1, "a": {"y": 2, "b": [true, null]}})");
  ChatRequest r;
  r.tools = json::array({tool});
  EXPECT_EQ(apply_chat_template(parse("{{ tools[0] | tojson }}"), r),
            R"({"z": 1, "a": {"y": 2, "b": [true, null]}})");
}

TEST(ChatTemplateApi, ContinueFinalMessage) {
  const ChatTemplate t = parse(
      "{% for m in messages %}<{{ m.role }}>{{ m.content }}</{{ m.role }}>\n{% endfor %}"
      "{% if add_generation_prompt %}<assistant>{% endif %}");
  ChatRequest r;
  r.messages = json::array(
      {{{"role", "user"}, {"content", "Hi"}}, {{"role", "assistant"}, {"content", "Hello, I"}}});
  r.continue_final_message = true;
  EXPECT_EQ(apply_chat_template(t, r), "<user>Hi</user>\n<assistant>Hello, I");
  // A template that trims the content: the cut is after the trimmed text.
  const ChatTemplate trimming =
      parse("{% for m in messages %}[{{ m.content | trim }}]{% endfor %}");
  r.messages[1]["content"] = "Hello, I  ";
  EXPECT_EQ(apply_chat_template(trimming, r), "[Hi][Hello, I");
  // List content: the last text block is continued.
  r.messages[1]["content"] = json::array({{{"type", "text"}, {"text", "first"}},
                                          {{"type", "image"}},
                                          {{"type", "text"}, {"text", "second"}}});
  const ChatTemplate parts = parse(
      "{% for m in messages %}{% if m.content is string %}{{ m.content }}{% else %}"
      "{% for p in m.content %}{{ p.text }}|{% endfor %}{% endif %}{% endfor %}");
  EXPECT_EQ(apply_chat_template(parts, r), "Hifirst||second");
  // Errors HF raises.
  r.add_generation_prompt = true;
  EXPECT_THROW(apply_chat_template(t, r), InputError);
  r.add_generation_prompt = false;
  EXPECT_THROW(apply_chat_template(parse("{% for m in messages %}x{% endfor %}"), r), InputError);
  r.messages[1]["content"] = json::array({{{"type", "image"}}});
  EXPECT_THROW(apply_chat_template(t, r), InputError);
}

TEST(ChatTemplateApi, StrftimeNowUsesTheInjectedClock) {
  const ChatTemplate t = parse("{{ strftime_now('%d %B %Y %H:%M:%S %a') }}");
  EXPECT_EQ(t.render(json::object(), testing::fixed_clock_options()), "26 July 2024 13:45:07 Fri");
  // The default clock is the system's local time.
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  EXPECT_EQ(parse("{{ strftime_now('%Y') }}").render(json::object()),
            std::to_string(local.tm_year + 1900));
}

TEST(ChatTemplateApi, RenderContextMustBeAnObject) {
  EXPECT_THROW(parse("x").render(json::array()), InputError);
}

TEST(ChatTemplateApi, OneTemplateRendersFromManyThreads) {
  const ChatTemplate t = ChatTemplate::parse(
      testing::read_fixture_text("templates/Qwen-Qwen3-0.6B.jinja"), "qwen3.jinja");
  const auto goldens = testing::load_fixture_json("goldens.json");
  ChatRequest r;
  r.messages = goldens["conversations"]["tools_defined"]["messages"];
  r.tools = goldens["conversations"]["tools_defined"]["tools"];
  r.add_generation_prompt = true;
  const std::string expected = apply_chat_template(t, r);
  std::vector<std::string> results(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 50; ++k) results[i] = apply_chat_template(t, r);
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& s : results) EXPECT_EQ(s, expected);
}

}  // namespace
}  // namespace ctxpar::chat_template
