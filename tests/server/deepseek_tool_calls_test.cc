// --tool-call-parser deepseek_v31 and deepseek_v3 (DeepSeek-V3.1, DeepSeek-V3 / R1): whole
// outputs split as vLLM's parsers split them (the cases of vLLM's
// tests/tool_parsers/test_deepseekv31_tool_parser.py and the formats' edges: a call on more than
// one line, a block the output ends in, a type that is not "function", text without a call),
// and streams cut at random points that give the same calls.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "ctxpar/server/tool_call_parser.h"
#include "support/seeded_rng.h"
#include "tool_call_stream_util.h"

namespace ctxpar::server {
namespace {

constexpr std::string_view kBegin = "<｜tool▁calls▁begin｜>", kEnd = "<｜tool▁calls▁end｜>";

ToolCallSplit v31(std::string_view text) {
  return split_tool_calls(ToolCallParser::kDeepSeekV31, text, nullptr);
}
ToolCallSplit v3(std::string_view text) {
  return split_tool_calls(ToolCallParser::kDeepSeekV3, text, nullptr);
}
std::string call31(std::string_view name, std::string_view args) {
  return fmt::format("<｜tool▁call▁begin｜>{}<｜tool▁sep｜>{}<｜tool▁call▁end｜>", name, args);
}
std::string call3(std::string_view name, std::string_view args,
                  std::string_view type = "function") {
  return fmt::format("<｜tool▁call▁begin｜>{}<｜tool▁sep｜>{}\n```json\n{}\n```<｜tool▁call▁end｜>",
                     type, name, args);
}
std::string block(std::string_view calls) {
  return std::string(kBegin) + std::string(calls) + std::string(kEnd);
}

void expect_no_calls(const ToolCallSplit& got, std::string_view text) {
  EXPECT_TRUE(got.calls.empty()) << text;
  EXPECT_EQ(got.content, std::string(text));
}

TEST(DeepSeekToolCalls, V31CallsAsVllmSplitsThem) {
  const ToolCallSplit one = v31("normal text" + block(call31("foo", R"({"x":1})")));
  EXPECT_EQ(one.content, "normal text");
  ASSERT_EQ(one.calls.size(), 1u);
  EXPECT_EQ(one.calls[0].name, "foo");
  EXPECT_EQ(one.calls[0].arguments, R"({"x":1})");  // as the model wrote it
  EXPECT_EQ(one.calls[0].id.rfind("chatcmpl-tool-", 0), 0u);
  const ToolCallSplit two =
      v31("some prefix text" + block(call31("foo", R"({"x":1})") + call31("bar", R"({"y":2})")) +
          " some suffix text");
  EXPECT_EQ(two.content, "some prefix text");
  ASSERT_EQ(two.calls.size(), 2u);
  EXPECT_EQ(two.calls[1].name, "bar");
  EXPECT_EQ(two.calls[1].arguments, R"({"y":2})");
  // A block the output ends in: its complete calls count.
  const ToolCallSplit open =
      v31(std::string(kBegin) + call31("foo", "{}") + "<｜tool▁call▁begin｜>bar<｜tool▁sep｜>{");
  ASSERT_EQ(open.calls.size(), 1u);
  EXPECT_EQ(open.content, std::nullopt);
  // vLLM's unparsable blocks, and a call across lines: no call, all content.
  for (const std::string& text :
       {std::string("Let me look that up.") + std::string(kBegin) + "get_weather",
        std::string(kBegin) + R"(foo<｜tool▁sep｜>{"x":1})" + std::string(kEnd),
        block(call31("foo", "{\n}")), block(call31("fo\no", "{}")), std::string("plain")}) {
    expect_no_calls(v31(text), text);
  }
}

TEST(DeepSeekToolCalls, V3CallsAsVllmSplitsThem) {
  const ToolCallSplit two = v3("Checking." + block(call3("get_weather", R"({"city": "Paris"})") +
                                                   "\n" + call3("get_time", "{}")));
  EXPECT_EQ(two.content, "Checking.");
  ASSERT_EQ(two.calls.size(), 2u);
  EXPECT_EQ(two.calls[0].name, "get_weather");
  EXPECT_EQ(two.calls[0].arguments, R"({"city": "Paris"})");
  EXPECT_EQ(two.calls[1].name, "get_time");
  // Arguments on more than one line are no call.
  const std::string multiline = block(call3("f", "{\n  \"a\": 1\n}"));
  expect_no_calls(v3(multiline), multiline);
  // A type that is not "function" makes vLLM's ToolCall refuse it: all content.
  const std::string typed = block(call3("f", "{}") + call3("g", "{}", "tool")) + "a";
  expect_no_calls(v3(typed), typed);
  // The v3.1 shape is no v3 call, and the other way round.
  const std::string shape31 = block(call31("f", "{}"));
  expect_no_calls(v3(shape31), shape31);
}

TEST(DeepSeekToolCalls, RandomlyCutStreamsGiveTheSameCalls) {
  SEEDED_RNG(rng);
  for (int round = 0; round < 200; ++round) {
    const bool is3 = rng() % 2 == 0;
    const ToolCallParser parser = is3 ? ToolCallParser::kDeepSeekV3 : ToolCallParser::kDeepSeekV31;
    std::string text = rng() % 2 ? "Let me check." : "";
    std::string calls;
    const int n = static_cast<int>(rng() % 3);
    for (int k = 0; k < n; ++k) {
      const std::string name = fmt::format("f{}", rng() % 10);
      const std::string args = fmt::format(R"({{"k": {}}})", rng() % 100);
      calls += (is3 ? call3(name, args) : call31(name, args)) + (rng() % 2 ? "\n" : "");
    }
    text += std::string(kBegin) + calls + (rng() % 3 ? std::string(kEnd) : "");
    SCOPED_TRACE(text);
    const ToolCallSplit want = split_tool_calls(parser, text, nullptr);
    ASSERT_EQ(want.calls.size(), static_cast<size_t>(n));
    const ToolCallStream::Delta got = test::stream_in_random_pieces(parser, nullptr, text, rng, 9);
    test::expect_same_calls(got.calls, want.calls);
    EXPECT_EQ(got.content, n == 0 ? text : want.content.value_or(""));
  }
}

// Long arguments stream as the model writes them (its own text, as the whole response keeps
// it): after every piece what went out is a prefix of the whole call's, and all of it is out
// by the end tag. A call whose line ends before its end tag is no call: the stream stops it.
TEST(DeepSeekToolCalls, ArgumentsStreamAsTheyAreWritten) {
  SEEDED_RNG(rng);
  static const char* const kChars[] = {"a", " ", "\\\"", "\\n",    "<",         ">",
                                       "{", "}", ":",    "\u00e9", "\U0001F600"};
  for (int round = 0; round < 100; ++round) {
    const bool is3 = rng() % 2 == 0;
    const ToolCallParser parser = is3 ? ToolCallParser::kDeepSeekV3 : ToolCallParser::kDeepSeekV31;
    std::string content;
    for (size_t n = 50 + rng() % 150; n > 0; --n) content += kChars[rng() % std::size(kChars)];
    const std::string args = R"({"path": "a.txt", "content": ")" + content + "\"}";
    const std::string first = is3 ? call3("write", args) : call31("write", args);
    const std::string text =
        "Writing.\n" + block(first + (is3 ? call3("f", "{}") : call31("f", "{}")));
    SCOPED_TRACE(text);
    const ToolCallSplit want = split_tool_calls(parser, text, nullptr);
    ASSERT_EQ(want.calls.size(), 2u);
    const test::CharacterStream got =
        test::stream_by_characters(parser, nullptr, text, rng, 4, want.calls, /*repeats=*/false,
                                   text.find(args) + args.size());
    test::expect_same_calls(got.calls, want.calls);
    EXPECT_GE(got.sent_at_mark + 8, args.size());  // less the piece that crosses the mark
  }
  // A newline inside the arguments' line: no call, whole or streamed past that point.
  const std::string broken = block(call31("f", "{\"a\":\n 1}") + call31("g", "{}"));
  const ToolCallSplit whole = v31(broken);
  ASSERT_EQ(whole.calls.size(), 1u);
  EXPECT_EQ(whole.calls[0].name, "g");
  const ToolCallStream::Delta got =
      test::stream_in_random_pieces(ToolCallParser::kDeepSeekV31, nullptr, broken, rng, 3);
  ASSERT_FALSE(got.calls.empty());
  EXPECT_EQ(got.calls.back().name, "g");
  EXPECT_EQ(got.calls.back().arguments, "{}");
}

}  // namespace
}  // namespace ctxpar::server
