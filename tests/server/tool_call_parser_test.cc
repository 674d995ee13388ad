// --tool-call-parser hermes: whole outputs split as vLLM's parser splits them (its cases: text
// before the calls, several calls, arguments as a JSON string, a call left open at the end,
// text that is not a call), arguments in Python's json.dumps form, and streams cut at random
// points (tags split across deltas included) that give the same calls.
#include "ctxpar/server/tool_call_parser.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/server/python_space.h"
#include "support/seeded_rng.h"
#include "tool_call_stream_util.h"

namespace ctxpar::server {
namespace {

ToolCallSplit hermes(std::string_view text) {
  return split_tool_calls(ToolCallParser::kHermes, text, nullptr);
}

TEST(ToolCallParser, NamesAreVllmsAndOthersAreRefused) {
  EXPECT_EQ(parse_tool_call_parser(""), ToolCallParser::kNone);
  EXPECT_EQ(parse_tool_call_parser("hermes"), ToolCallParser::kHermes);
  EXPECT_EQ(parse_tool_call_parser("glm45"), ToolCallParser::kGlm45);
  EXPECT_EQ(parse_tool_call_parser("glm47"), ToolCallParser::kGlm47);
  EXPECT_EQ(parse_tool_call_parser("deepseek_v32"), ToolCallParser::kDeepSeekV32);
  EXPECT_EQ(parse_tool_call_parser("deepseek_v31"), ToolCallParser::kDeepSeekV31);
  EXPECT_EQ(parse_tool_call_parser("deepseek_v3"), ToolCallParser::kDeepSeekV3);
  EXPECT_EQ(parse_tool_call_parser("llama3_json"), ToolCallParser::kLlama3Json);
  EXPECT_EQ(parse_tool_call_parser("qwen3_coder"), ToolCallParser::kQwen3Coder);
  EXPECT_EQ(parse_tool_call_parser("pythonic"), ToolCallParser::kPythonic);
  try {
    parse_tool_call_parser("mistral");
    ADD_FAILURE() << "mistral was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "'mistral' is not supported; use hermes, glm45, glm47, deepseek_v32, "
                  "deepseek_v31, deepseek_v3, llama3_json, qwen3_coder or pythonic"),
              std::string::npos)
        << e.what();
  }
}

TEST(ToolCallParser, WholeOutputsSplitAsVllmsHermesParser) {
  const ToolCallSplit none = hermes("no call here");
  EXPECT_EQ(none.content, "no call here");
  EXPECT_TRUE(none.calls.empty());

  const ToolCallSplit two = hermes(
      "Let me look.\n<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\", "
      "\"days\": [1, 2], \"metric\": true}}\n</tool_call>\n<tool_call>\n{\"name\":\"time\","
      "\"arguments\":\"{\\\"zone\\\":\\\"CET\\\"}\"}\n</tool_call>");
  EXPECT_EQ(two.content, "Let me look.\n");
  ASSERT_EQ(two.calls.size(), 2u);
  EXPECT_EQ(two.calls[0].name, "weather");
  // json.dumps: ", " and ": ", the model's key order (not sorted).
  EXPECT_EQ(two.calls[0].arguments, R"({"city": "Paris", "days": [1, 2], "metric": true})");
  EXPECT_EQ(two.calls[1].name, "time");
  EXPECT_EQ(two.calls[1].arguments, R"({"zone": "CET"})");  // a string argument, parsed
  EXPECT_EQ(two.calls[0].id.rfind("chatcmpl-tool-", 0), 0u);
  EXPECT_EQ(two.calls[0].id.size(), std::string("chatcmpl-tool-").size() + 32);
  EXPECT_NE(two.calls[0].id, two.calls[1].id);

  // No text before the call: null content; a call left open at the end still counts.
  const ToolCallSplit open =
      hermes("<tool_call>{\"name\": \"f\", \"arguments\": {\"z\": 1, \"a\": 2}}");
  EXPECT_EQ(open.content, std::nullopt);
  ASSERT_EQ(open.calls.size(), 1u);
  EXPECT_EQ(open.calls[0].arguments, R"({"z": 1, "a": 2})");

  // Not a call (bad JSON, no name, no arguments): no calls, the whole text as content.
  for (const std::string text :
       {"x<tool_call>{\"name\": \"f\", \"arguments\": {</tool_call>",
        "<tool_call>{\"arguments\": {}}</tool_call>", "<tool_call>{\"name\": \"f\"}</tool_call>",
        "<tool_call>[1, 2]</tool_call>"}) {
    const ToolCallSplit bad = hermes(text);
    EXPECT_EQ(bad.content, text);
    EXPECT_TRUE(bad.calls.empty()) << text;
  }
}

TEST(ToolCallParser, RandomlyCutStreamsGiveTheSameCalls) {
  SEEDED_RNG(rng);
  const auto words = [&](size_t n) { return test::random_text(rng, n, "ab <>/tol_c\n"); };
  for (int round = 0; round < 200; ++round) {
    const std::string before = words(rng() % 20), after = words(rng() % 10);
    if (before.find("<tool_call>") != std::string::npos ||
        after.find("<tool_call>") != std::string::npos) {
      continue;  // a tag drawn by chance
    }
    const int n = static_cast<int>(rng() % 3);
    std::string text = before;
    std::vector<std::string> names;
    for (int k = 0; k < n; ++k) {
      names.push_back(fmt::format("f{}", rng() % 100));
      text += fmt::format(
          "<tool_call>\n{{\"name\": \"{}\", \"arguments\": {{\"k\": {}}}}}\n</tool_call>",
          names.back(), k);
    }
    if (n == 0) text += after;  // text after calls is dropped whole, streamed as content
    SCOPED_TRACE(text);
    const ToolCallSplit want = hermes(text);
    ASSERT_EQ(want.calls.size(), names.size());

    const ToolCallStream::Delta got =
        test::stream_in_random_pieces(ToolCallParser::kHermes, nullptr, text, rng, 6);
    // Whitespace before calls streams as content, as vLLM streams it; the whole response makes
    // it null (vLLM's chat serving).
    if (!want.calls.empty() && python_strip_space(got.content).empty()) {
      EXPECT_FALSE(want.content.has_value());
    } else {
      EXPECT_EQ(got.content, want.content.value_or(""));
    }
    test::expect_same_calls(got.calls, want.calls);
  }
  // A streamed call that is not one goes out as content, tags and all.
  ToolCallStream stream(ToolCallParser::kHermes);
  const ToolCallStream::Delta d = stream.add("hi<tool_call>{oops}</tool_call>", true);
  EXPECT_EQ(d.content, "hi<tool_call>{oops}</tool_call>");
  EXPECT_TRUE(d.calls.empty());
}

// A hermes call streams as the model writes it: the id and name once the name is whole, the
// arguments piece by piece before the closing tag (all of them once their object closed), in the
// json.dumps form the whole response gives; the pieces and the rest at the close add up to it.
TEST(ToolCallParser, HermesArgumentsStreamBeforeTheCloseTag) {
  SEEDED_RNG(rng);
  const std::vector<std::string> values = {R"("Paris")",
                                           R"("line\nbreak \"q\" \u00e9\ud83d\ude00")",
                                           "12",
                                           "-1.50e2",
                                           "true",
                                           "null",
                                           R"([1,  2 , "x"])",
                                           R"({"deep" :{"er":[]}})",
                                           R"("")"};
  for (int trial = 0; trial < 300; ++trial) {
    std::string args = "{";
    const int n = static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) {
      args += fmt::format("{}\"k{}\"{}:{}{}", i > 0 ? "," : "", i, rng() % 2 ? " " : "",
                          rng() % 2 ? " " : "\n  ", values[rng() % values.size()]);
    }
    args += "}";
    const std::string head =
        fmt::format("Sure.<tool_call>\n{{\"name\": \"f{}\", \"arguments\": ", trial % 7);
    const std::string tail = "}\n</tool_call>";
    const std::string text = head + args + tail;
    SCOPED_TRACE(text);
    const ToolCallSplit want = hermes(text);
    ASSERT_EQ(want.calls.size(), 1u);

    // Up to the arguments' closing brace, unfinished: the name and every argument are out.
    ToolCallStream stream(ToolCallParser::kHermes);
    std::vector<ToolCallPiece> calls;
    std::string content;
    const std::string before_tail = head + args;
    bool args_before_end = false;
    for (size_t at = 0; at < before_tail.size();) {
      const size_t len = std::min(before_tail.size() - at, size_t{1} + rng() % 5);
      ToolCallStream::Delta d = stream.add(std::string_view(before_tail).substr(at, len), false);
      content += d.content;
      for (ToolCallPiece& p : d.calls) {
        args_before_end |= !p.arguments.empty() && at + len < before_tail.size();
        test::add_piece(calls, std::move(p));
      }
      at += len;
    }
    EXPECT_EQ(content, "Sure.");
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].name, want.calls[0].name);
    EXPECT_EQ(calls[0].arguments, want.calls[0].arguments);
    EXPECT_TRUE(args_before_end || n == 0);
    // The close adds nothing more; the whole stream adds up to the whole response.
    const ToolCallStream::Delta last = stream.add(tail, true);
    EXPECT_TRUE(last.calls.empty());
    EXPECT_EQ(last.content, "");
    const ToolCallStream::Delta all =
        test::stream_in_random_pieces(ToolCallParser::kHermes, nullptr, text, rng, 6);
    test::expect_same_calls(all.calls, want.calls);
  }
  // Arguments as a JSON string (the other shape hermes takes) wait for the close, whole.
  ToolCallStream quoted(ToolCallParser::kHermes);
  const ToolCallStream::Delta named =
      quoted.add(R"(<tool_call>{"name": "g", "arguments": "{\"a\": 1}")", false);
  ASSERT_EQ(named.calls.size(), 1u);
  EXPECT_EQ(named.calls[0].name, "g");
  EXPECT_EQ(named.calls[0].arguments, "");
  const ToolCallStream::Delta rest = quoted.add("}</tool_call>", true);
  ASSERT_EQ(rest.calls.size(), 1u);
  EXPECT_EQ(rest.calls[0].index, 0);
  EXPECT_EQ(rest.calls[0].id, "");
  EXPECT_EQ(rest.calls[0].arguments, R"({"a": 1})");
}

}  // namespace
}  // namespace ctxpar::server
