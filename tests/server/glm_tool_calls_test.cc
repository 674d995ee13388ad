// --tool-call-parser glm47 and glm45 (GLM-4.7 / GLM-5, GLM-4.5 / 4.6): whole outputs split as
// vLLM's parsers split them (the cases of vLLM's tests/tool_parsers/test_glm47_moe_tool_parser.py
// and test_glm4_moe_tool_parser.py, and the format's edges: names, calls without arguments,
// whitespace, typing by the tools' schemas, Python literals, broken calls), and streams cut at
// random points that give the same calls, with broken calls kept as content.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "ctxpar/server/glm_tool_calls.h"
#include "ctxpar/server/tool_call_parser.h"
#include "support/seeded_rng.h"
#include "tool_call_stream_util.h"

namespace ctxpar::server {
namespace {

using nlohmann::json;

// vLLM's test fixture: a tool without parameters and one with two string parameters.
const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_current_date", "parameters": {}}},
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}, "date": {"type": "string"}}}}},
  {"type": "function", "function": {"name": "apply_diff", "parameters": {"type": "object",
    "properties": {"s": {"type": "string"}, "n": {"type": "integer"},
                   "either": {"type": ["string", "null"]}}}}}
])");

ToolCallSplit glm47(std::string_view text, const json& tools = kTools) {
  return split_tool_calls(ToolCallParser::kGlm47, text, tools);
}
ToolCallSplit glm45(std::string_view text, const json& tools = kTools) {
  return split_tool_calls(ToolCallParser::kGlm45, text, tools);
}

// One call named `name` with exactly `arguments` (json.dumps text), and the content.
void expect_one(const ToolCallSplit& got, const std::optional<std::string>& content,
                const std::string& name, const std::string& arguments) {
  EXPECT_EQ(got.content, content);
  ASSERT_EQ(got.calls.size(), 1u);
  EXPECT_EQ(got.calls[0].name, name);
  EXPECT_EQ(got.calls[0].arguments, arguments);
  EXPECT_EQ(got.calls[0].id.rfind("chatcmpl-tool-", 0), 0u);
}

void expect_no_calls(const ToolCallSplit& got, std::string_view text) {
  EXPECT_TRUE(got.calls.empty()) << text;
  EXPECT_EQ(got.content, std::string(text));
}

TEST(GlmToolCalls, Glm47CallsAsVllmSplitsThem) {
  const std::optional<std::string> null;
  expect_no_calls(glm47("This is a plain response."), "This is a plain response.");
  // No arguments: inline, or a newline before the closing tag.
  expect_one(glm47("<tool_call>get_current_date</tool_call>"), null, "get_current_date", "{}");
  expect_one(glm47("<tool_call>get_current_date\n</tool_call>"), null, "get_current_date", "{}");
  expect_one(glm47("<tool_call>\n  get_current_date  \n</tool_call>"), null, "get_current_date",
             "{}");
  // Arguments on the name's line, or on lines of their own.
  expect_one(glm47("<tool_call>get_weather<arg_key>city</arg_key><arg_value>Beijing</arg_value>"
                   "</tool_call>"),
             null, "get_weather", R"({"city": "Beijing"})");
  expect_one(glm47("<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing"
                   "</arg_value>\n<arg_key>date</arg_key>\n<arg_value>2025-08-01</arg_value>\n"
                   "</tool_call>"),
             null, "get_weather", R"({"city": "Beijing", "date": "2025-08-01"})");
  // Text before the call is the content; only whitespace is none.
  expect_one(glm47("Checking.<tool_call>get_current_date</tool_call>"), "Checking.",
             "get_current_date", "{}");
  expect_one(glm47("  \n  <tool_call>get_current_date</tool_call>"), null, "get_current_date",
             "{}");
  const ToolCallSplit two = glm47(
      "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Beijing</arg_value></tool_call>"
      "then<tool_call>get_weather<arg_key>city</arg_key><arg_value>Shanghai</arg_value>"
      "</tool_call>after");
  ASSERT_EQ(two.calls.size(), 2u);
  EXPECT_EQ(two.calls[1].arguments, R"({"city": "Shanghai"})");
  EXPECT_NE(two.calls[0].id, two.calls[1].id);
  EXPECT_EQ(two.content, std::nullopt);  // text after the first call is dropped
  // A name with a space, or nothing at all, is no call; with no other call all is content.
  for (const char* text : {"<tool_call>get weather</tool_call>", "<tool_call></tool_call>",
                           "<tool_call> \n </tool_call>",
                           "<tool_call>get_weather junk<arg_key>city</arg_key></tool_call>"}) {
    expect_no_calls(glm47(text), text);
  }
  // ... and is skipped beside a good call.
  expect_one(glm47("a<tool_call>bad name</tool_call><tool_call>get_current_date</tool_call>"), "a",
             "get_current_date", "{}");
  // vLLM searches the block for the call's pattern: it may start at a <tool_call> inside it.
  expect_one(glm47("\t<tool_call><tool_call> \t1</tool_call>"), null, "1", "{}");
  // Names are stripped as Python strings are (\x1c is whitespace there, not to the regex).
  expect_one(glm47("<tool_call>get_current_date\x1c</tool_call>"), null, "get_current_date", "{}");
  // A call left open, or a tag alone, is no call.
  for (const char* text :
       {"<tool_call>   ", "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Beijing",
        "x</tool_call>"}) {
    expect_no_calls(glm47(text), text);
  }
}

TEST(GlmToolCalls, Glm45NeedsTheNewlineAfterTheName) {
  const std::optional<std::string> null;
  expect_one(glm45("<tool_call>get_current_weather\n    <arg_key>city</arg_key>\n    "
                   "<arg_value>Dallas</arg_value>\n    <arg_key>state</arg_key>\n    "
                   "<arg_value>TX</arg_value>\n    <arg_key>unit</arg_key>\n    <arg_value>"
                   "fahrenheit</arg_value>\n    </tool_call>"),
             null, "get_current_weather",
             R"({"city": "Dallas", "state": "TX", "unit": "fahrenheit"})");
  expect_one(glm45("<tool_call>get_current_time\n</tool_call>"), null, "get_current_time", "{}");
  // The first line is the name, spaces and all (stripped).
  expect_one(glm45("<tool_call> get current time \n</tool_call>"), null, "get current time", "{}");
  // vLLM's thinking-tags case: the tool parser alone keeps the thinking in the content.
  expect_one(glm45("<think>I want to get the weather.</think>\n\nI will help you get the "
                   "weather.\n<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>"
                   "Beijing</arg_value>\n</tool_call>"),
             "<think>I want to get the weather.</think>\n\nI will help you get the weather.\n",
             "get_weather", R"({"city": "Beijing"})");
  // vLLM's malformed case: a key without </arg_key> is no pair; the good pair stays.
  expect_one(glm45("<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Seattle"
                   "</arg_value>\n<arg_key>incomplete_arg\n<arg_value>value</arg_value>\n"
                   "</tool_call>"),
             null, "get_weather", R"({"city": "Seattle"})");
  // GLM-4.7's inline form has no newline: glm45 sees no call.
  const char* inline_call = "<tool_call>get_current_date</tool_call>";
  expect_no_calls(glm45(inline_call), inline_call);
}

TEST(GlmToolCalls, ArgumentsAreTypedByTheToolsSchemas) {
  const std::optional<std::string> null;
  const auto args = [](std::string_view pairs, const json& tools = kTools) {
    const ToolCallSplit got =
        glm47(fmt::format("<tool_call>apply_diff{}</tool_call>", pairs), tools);
    EXPECT_EQ(got.calls.size(), 1u) << pairs;
    return got.calls.empty() ? std::string("(no call)") : got.calls[0].arguments;
  };
  const auto pair = [](std::string_view key, std::string_view value) {
    return fmt::format("<arg_key>{}</arg_key><arg_value>{}</arg_value>", key, value);
  };
  // vLLM's numeric case: an undeclared parameter is typed from its text.
  EXPECT_EQ(args(pair("operation", "add") + pair("a", "42") + pair("b", "3.14") +
                 pair("enabled", "true")),
            R"({"operation": "add", "a": 42, "b": 3.14, "enabled": true})");
  // A string parameter keeps its text, whitespace and all; others are stripped and typed.
  EXPECT_EQ(args(pair("s", "    indented code    ")), R"({"s": "    indented code    "})");
  EXPECT_EQ(args(pair("s", "42") + pair("n", " 42\n")), R"({"s": "42", "n": 42})");
  EXPECT_EQ(args(pair("s", "{\"a\": 1}")), R"({"s": "{\"a\": 1}"})");
  // A type list is not "string": the value is typed.
  EXPECT_EQ(args(pair("either", "null")), R"({"either": null})");
  // JSON first, then Python literals, else the text.
  EXPECT_EQ(args(pair("x", R"({"b": [1, 2.50, null], "a": "é"})")),
            R"({"x": {"b": [1, 2.5, null], "a": "é"}})");
  EXPECT_EQ(args(pair("x", "{'a': True, 'b': None, 'c': (1, 2)}")),
            R"({"x": {"a": true, "b": null, "c": [1, 2]}})");
  EXPECT_EQ(args(pair("x", "[1, 2,]") + pair("y", "'quoted'") + pair("z", "not json")),
            R"({"x": [1, 2], "y": "quoted", "z": "not json"})");
  EXPECT_EQ(args(pair("x", "NaN") + pair("y", "1e400") + pair("z", "-0")),
            R"({"x": NaN, "y": Infinity, "z": 0})");
  EXPECT_EQ(args(pair("x", "") + pair("y", "  \n ")), R"({"x": "", "y": ""})");
  // Keys are stripped; a repeated key keeps its first place and takes the last value.
  EXPECT_EQ(args(pair(" k ", "1") + pair("j", "2") + pair("k", "3")), R"({"k": 3, "j": 2})");
  // Whitespace between the tags; a key that runs past a stray </arg_key>, as the regex reads it.
  EXPECT_EQ(args("\n<arg_key>a</arg_key>\n\t <arg_value>1</arg_value>\n"), R"({"a": 1})");
  EXPECT_EQ(args("<arg_key>a</arg_key>x<arg_key>b</arg_key><arg_value>2</arg_value>"),
            R"({"a</arg_key>x<arg_key>b": 2})");
  // Unicode stays as it is.
  EXPECT_EQ(args(pair("s", "你好世界") + pair("e", "🎉")), R"({"s": "你好世界", "e": "🎉"})");
  // Without tools every value is typed.
  EXPECT_EQ(args(pair("s", "42"), json(nullptr)), R"({"s": 42})");
  // A value json.dumps refuses (a Python set) makes vLLM's parser raise: all content.
  const std::string spoiled = "a<tool_call>get_current_date</tool_call><tool_call>apply_diff" +
                              pair("x", "{1, 2}") + "</tool_call>";
  expect_no_calls(glm47(spoiled), spoiled);
}

// The output's calls and content when streamed in random pieces, the last one finishing.
ToolCallStream::Delta streamed(ToolCallParser parser, std::string_view text, std::mt19937_64& rng) {
  return test::stream_in_random_pieces(parser, &kTools, text, rng, 6);
}

TEST(GlmToolCalls, RandomlyCutStreamsGiveTheSameCalls) {
  SEEDED_RNG(rng);
  for (int round = 0; round < 300; ++round) {
    const bool is47 = rng() % 2 == 0;
    const ToolCallParser parser = is47 ? ToolCallParser::kGlm47 : ToolCallParser::kGlm45;
    const std::string before = test::random_text(rng, rng() % 20, "ab <>/tol_c\n");
    if (before.find("<tool_call>") != std::string::npos) continue;  // a tag drawn by chance
    std::string text = before;
    const int n = static_cast<int>(rng() % 3);
    for (int k = 0; k < n; ++k) {
      std::string call = "<tool_call>" + std::string(rng() % 2 ? "get_weather" : "apply_diff");
      call += is47 && rng() % 2 ? "" : "\n";
      // Each key once: a repeated one keeps its first place with its last value, which no
      // stream can send in order (RepeatedKeysStreamAsValidJson).
      const bool city_first = rng() % 2 == 0;
      for (int a = static_cast<int>(rng() % 3); a > 0; --a) {
        call += fmt::format("<arg_key>{}</arg_key>{}<arg_value>{}</arg_value>{}",
                            (a == 2) == city_first ? "city" : "n", rng() % 2 ? "\n" : "",
                            rng() % 2 ? "Paris" : " 12 ", rng() % 2 ? "\n" : "");
      }
      text += call + "</tool_call>";
      if (rng() % 2) text += "\n";  // between calls: streamed as content, dropped whole
    }
    SCOPED_TRACE(text);
    const ToolCallSplit want = split_tool_calls(parser, text, kTools);
    ASSERT_EQ(want.calls.size(), static_cast<size_t>(n));
    const ToolCallStream::Delta got = streamed(parser, text, rng);
    test::expect_same_calls(got.calls, want.calls);
    // The streamed content is the text outside the calls.
    std::string outside = text;
    for (size_t at; (at = outside.find("<tool_call>")) != std::string::npos;) {
      outside.erase(at, outside.find("</tool_call>", at) + 12 - at);
    }
    EXPECT_EQ(got.content, outside);
    if (n == 0) {
      EXPECT_EQ(want.content, text);
    }
  }
}

TEST(GlmToolCalls, BrokenCallsStreamAsContent) {
  SEEDED_RNG(rng);
  for (const char* text :
       {"hi<tool_call></tool_call>bye", "<tool_call>bad name</tool_call>", "text<tool_call"}) {
    SCOPED_TRACE(text);
    const ToolCallStream::Delta got = streamed(ToolCallParser::kGlm47, text, rng);
    EXPECT_TRUE(got.calls.empty());
    EXPECT_EQ(got.content, text);
    expect_no_calls(glm47(text), text);
  }
  // A call whose name was whole went out before the stream could know that vLLM reads none:
  // cut by the end of the output, or a value json.dumps refuses (a Python set). It ends as
  // the valid JSON it had; the whole response is content.
  const struct {
    const char* text;
    const char* arguments;
  } sent[] = {
      {"<tool_call>get_weather<arg_key>city</arg_key><arg_value>cut off", R"({"city": "cut off"})"},
      {"<tool_call>apply_diff<arg_key>x</arg_key><arg_value>{1}</arg_value></tool_call>", "{}"}};
  for (const auto& [text, arguments] : sent) {
    SCOPED_TRACE(text);
    const ToolCallStream::Delta got = streamed(ToolCallParser::kGlm47, text, rng);
    EXPECT_EQ(got.content, "");
    ASSERT_EQ(got.calls.size(), 1u);
    EXPECT_EQ(got.calls[0].arguments, arguments);
    expect_no_calls(glm47(text), text);
  }
}

// GLM-5 writing a file: the string argument streams as it is written, whatever its characters
// (tags too, unless they close it), and what went out is always a prefix of the whole call's
// arguments; a repeated key ends the stream's call as valid JSON.
TEST(GlmToolCalls, StringArgumentsStreamAsTheyAreWritten) {
  SEEDED_RNG(rng);
  static const char* const kChars[] = {"a", " ", "\n",     "\"",         "\\",        "<",
                                       ">", "/", "\u00e9", "\U0001F600", "<arg_key>", "</tool"};
  for (int round = 0; round < 100; ++round) {
    const bool is47 = rng() % 2 == 0;
    const ToolCallParser parser = is47 ? ToolCallParser::kGlm47 : ToolCallParser::kGlm45;
    std::string file;
    for (size_t n = 50 + rng() % 100; n > 0; --n) file += kChars[rng() % std::size(kChars)];
    const bool repeat = rng() % 4 == 0;
    const std::string text = fmt::format(
        "<tool_call>apply_diff\n<arg_key>n</arg_key><arg_value>7</arg_value>\n"
        "<arg_key>s</arg_key>\n<arg_value>{}</arg_value>{}</tool_call>",
        file, repeat ? "<arg_key>n</arg_key><arg_value>8</arg_value>" : "");
    SCOPED_TRACE(text);
    const ToolCallSplit want = split_tool_calls(parser, text, kTools);
    ASSERT_EQ(want.calls.size(), 1u);
    const test::CharacterStream got =
        test::stream_by_characters(parser, &kTools, text, rng, 4, want.calls, repeat,
                                   text.find("</arg_value>", text.find(file)));
    ASSERT_EQ(got.calls.size(), 1u);
    EXPECT_TRUE(json::parse(got.calls[0].arguments).is_object());
    if (repeat) continue;
    test::expect_same_calls(got.calls, want.calls);
    EXPECT_GE(got.sent_at_mark + 16, want.calls[0].arguments.size());
  }
}

}  // namespace
}  // namespace ctxpar::server
