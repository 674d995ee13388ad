// --reasoning-parser: the whole-output split of each parser on the shapes thinking models
// produce, and streams cut at random points (tags split across deltas included) that add up to
// the same reasoning and content.
#include "ctxpar/server/reasoning_parser.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "ctxpar/core/error.h"
#include "support/seeded_rng.h"

namespace ctxpar::server {
namespace {

using Part = ReasoningSplit::Part;

Part whole(ReasoningParser p, std::string_view text, bool thinking = false,
           std::string_view prompt = "<|Assistant|>") {
  return ReasoningSplit(p, thinking, prompt).whole(text);
}

// The text in random pieces (1 to 5 bytes), the last one marked finished.
Part streamed(ReasoningParser p, std::string_view text, std::mt19937_64& rng, bool thinking = false,
              std::string_view prompt = "<|Assistant|>") {
  ReasoningSplit split(p, thinking, prompt);
  std::string reasoning, content;
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min(text.size() - at, size_t{1} + rng() % 5);
    const ReasoningSplit::Delta d = split.add(text.substr(at, n), at + n == text.size());
    reasoning += d.reasoning;
    content += d.content;
    at += n;
  }
  return {reasoning, content};
}

TEST(ReasoningParser, NamesAreVllmsAndOthersAreRefused) {
  EXPECT_EQ(parse_reasoning_parser(""), ReasoningParser::kNone);
  EXPECT_EQ(parse_reasoning_parser("deepseek_r1"), ReasoningParser::kDeepSeekR1);
  EXPECT_EQ(parse_reasoning_parser("qwen3"), ReasoningParser::kQwen3);
  EXPECT_EQ(parse_reasoning_parser("deepseek_v3"), ReasoningParser::kDeepSeekV3);
  EXPECT_EQ(parse_reasoning_parser("glm45"), ReasoningParser::kGlm45);
  for (const char* name : {"granite", "glm47", "GLM45"}) {
    try {
      parse_reasoning_parser(name);
      ADD_FAILURE() << name << " was taken";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(
                    fmt::format("'{}' is not supported; use deepseek_r1, qwen3, deepseek_v3 or "
                                "glm45",
                                name)),
                std::string::npos)
          << e.what();
    }
  }
}

// The switch each parser reads from chat_template_kwargs: deepseek_v3 thinks only when asked,
// glm45 unless told not to (vLLM: bool() of either key; GLM's default is on).
TEST(ReasoningParser, ThinkingSwitchIsReadAsVllmReadsIt) {
  using nlohmann::json;
  using R = ReasoningParser;
  const auto on = [](R p, const char* kwargs) {
    return thinking_requested(p, json::parse(kwargs));
  };
  EXPECT_FALSE(thinking_requested(R::kDeepSeekV3, nullptr));
  EXPECT_FALSE(on(R::kDeepSeekV3, "{}"));
  EXPECT_TRUE(on(R::kDeepSeekV3, R"({"thinking": true})"));
  EXPECT_TRUE(on(R::kDeepSeekV3, R"({"enable_thinking": 1})"));
  EXPECT_FALSE(on(R::kDeepSeekV3, R"({"thinking": false, "enable_thinking": null})"));
  // glm45: on by default, off only when neither key is truthy.
  EXPECT_TRUE(thinking_requested(R::kGlm45, nullptr));
  EXPECT_TRUE(on(R::kGlm45, "{}"));
  EXPECT_TRUE(on(R::kGlm45, R"({"thinking": null, "enable_thinking": null})"));
  EXPECT_TRUE(on(R::kGlm45, R"({"other": false})"));
  EXPECT_FALSE(on(R::kGlm45, R"({"enable_thinking": false})"));
  EXPECT_FALSE(on(R::kGlm45, R"({"thinking": false})"));
  EXPECT_FALSE(on(R::kGlm45, R"({"thinking": 0, "enable_thinking": ""})"));
  EXPECT_TRUE(on(R::kGlm45, R"({"thinking": false, "enable_thinking": true})"));
  EXPECT_TRUE(on(R::kGlm45, R"({"enable_thinking": "yes"})"));
  EXPECT_FALSE(on(R::kGlm45, R"({"enable_thinking": []})"));
  // The parsers without a switch ignore the keys.
  EXPECT_FALSE(on(R::kDeepSeekR1, R"({"thinking": true})"));
  EXPECT_FALSE(on(R::kQwen3, R"({"enable_thinking": true})"));
}

TEST(ReasoningParser, WholeOutputsSplitAsVllmsParsers) {
  using R = ReasoningParser;
  const std::optional<std::string> null;
  const auto expect = [](const Part& got, const std::optional<std::string>& reasoning,
                         const std::optional<std::string>& content) {
    EXPECT_EQ(got.reasoning, reasoning);
    EXPECT_EQ(got.content, content);
  };
  // deepseek_r1: up to </think> is reasoning, with or without <think> in the output.
  expect(whole(R::kDeepSeekR1, "<think>plan</think>answer"), "plan", "answer");
  expect(whole(R::kDeepSeekR1, "plan</think>\n\nanswer"), "plan", "\n\nanswer");
  expect(whole(R::kDeepSeekR1, "still thinking"), "still thinking", null);
  expect(whole(R::kDeepSeekR1, "plan</think>"), "plan", null);
  expect(whole(R::kDeepSeekR1, "noise<think>plan</think>x"), "plan", "x");
  // qwen3: the same with </think>, all content without it.
  expect(whole(R::kQwen3, "<think>plan</think>answer"), "plan", "answer");
  expect(whole(R::kQwen3, "plan</think>answer"), "plan", "answer");
  expect(whole(R::kQwen3, "just an answer"), null, "just an answer");
  expect(whole(R::kQwen3, "<think>unfinished"), null, "<think>unfinished");
  // deepseek_v3: deepseek_r1 with the thinking switch, no split without it.
  expect(whole(R::kDeepSeekV3, "plan</think>answer", true), "plan", "answer");
  expect(whole(R::kDeepSeekV3, "plan</think>answer", false), null, "plan</think>answer");
  // glm45 (GLM-4.5 writes <think> itself; GLM-4.7 and GLM-5 prompts end in <think>):
  // deepseek_r1 while thinking, no split once chat_template_kwargs turned it off.
  expect(whole(R::kGlm45, "<think>plan</think>answer", true), "plan", "answer");
  expect(whole(R::kGlm45, "plan</think>\nanswer", true, "<|assistant|><think>"), "plan",
         "\nanswer");
  expect(whole(R::kGlm45, "plan, cut off", true, "<|assistant|><think>"), "plan, cut off", null);
  expect(whole(R::kGlm45, "plan</think>", true), "plan", null);
  expect(whole(R::kGlm45, "plan</think>answer", false), null, "plan</think>answer");
  // GLM's template for enable_thinking false ends the prompt in </think>: all content.
  expect(whole(R::kGlm45, "answer", true, "<|assistant|></think>"), null, "answer");
  // A prompt whose thinking was closed (Qwen3, enable_thinking false): all content.
  expect(whole(R::kDeepSeekR1, "answer", false, "<think>\n\n</think>\n\n"), null, "answer");
  expect(whole(R::kDeepSeekR1, "plan</think>answer", false, "<think>"), "plan", "answer");
  // A </think> earlier in the conversation does not close this turn's thinking.
  expect(whole(R::kQwen3, "plan</think>answer", false, "<think>a</think>b<|im_start|>assistant\n"),
         "plan", "answer");
  expect(whole(R::kNone, "a</think>b"), null, "a</think>b");
}

TEST(ReasoningParser, RandomlyCutStreamsAddUpToTheWholeSplit) {
  SEEDED_RNG(rng);
  const auto random_text = [&](size_t n) {
    std::string t;
    const char letters[] = "a <>/think\n";
    for (size_t i = 0; i < n; ++i) t += letters[rng() % (sizeof(letters) - 1)];
    return t;
  };
  for (int round = 0; round < 200; ++round) {
    const std::string reasoning = random_text(rng() % 30), content = random_text(1 + rng() % 30);
    SCOPED_TRACE(::testing::Message()
                 << "reasoning '" << reasoning << "' content '" << content << "'");
    if (reasoning.find("think>") != std::string::npos ||
        content.find("think>") != std::string::npos) {
      continue;  // a tag drawn by chance
    }
    for (ReasoningParser p :
         {ReasoningParser::kDeepSeekR1, ReasoningParser::kQwen3, ReasoningParser::kGlm45}) {
      for (const std::string& text :
           {"<think>" + reasoning + "</think>" + content, reasoning + "</think>" + content}) {
        const Part want = whole(p, text, true);
        ASSERT_EQ(want.reasoning, reasoning);
        ASSERT_EQ(want.content, content);
        const Part got = streamed(p, text, rng, true);
        EXPECT_EQ(got.reasoning, reasoning) << text;
        EXPECT_EQ(got.content, content) << text;
      }
    }
    // Unfinished thinking streams as reasoning (vLLM streams qwen3's the same way).
    const Part open = streamed(ReasoningParser::kQwen3, "<think>" + reasoning, rng);
    EXPECT_EQ(open.reasoning, reasoning);
    EXPECT_EQ(open.content, "");
    // No split: everything is content.
    const std::string text = reasoning + "</think>" + content;
    EXPECT_EQ(streamed(ReasoningParser::kDeepSeekV3, text, rng).content, text);
    EXPECT_EQ(streamed(ReasoningParser::kGlm45, text, rng).content, text);
    EXPECT_EQ(streamed(ReasoningParser::kDeepSeekR1, text, rng, false, "</think>").content, text);
  }
}

}  // namespace
}  // namespace ctxpar::server
