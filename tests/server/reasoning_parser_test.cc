// --reasoning-parser: the whole-output split of each parser on the shapes thinking models
// produce, and streams cut at random points (tags split across deltas included) that add up to
// the same reasoning and content.
#include "ctxpar/server/reasoning_parser.h"

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
  try {
    parse_reasoning_parser("granite");
    ADD_FAILURE() << "granite was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'granite' is not supported; use deepseek_r1, qwen3"),
              std::string::npos)
        << e.what();
  }
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
    for (ReasoningParser p : {ReasoningParser::kDeepSeekR1, ReasoningParser::kQwen3}) {
      for (const std::string& text :
           {"<think>" + reasoning + "</think>" + content, reasoning + "</think>" + content}) {
        const Part want = whole(p, text);
        ASSERT_EQ(want.reasoning, reasoning);
        ASSERT_EQ(want.content, content);
        const Part got = streamed(p, text, rng);
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
    EXPECT_EQ(streamed(ReasoningParser::kDeepSeekR1, text, rng, false, "</think>").content, text);
  }
}

}  // namespace
}  // namespace ctxpar::server
