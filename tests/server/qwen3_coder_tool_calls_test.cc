// --tool-call-parser qwen3_coder (Qwen3-Coder): whole outputs split as vLLM 0.23's
// qwen3coder_tool_parser.py splits them (the cases of vLLM's test_qwen3coder_tool_parser.py, and
// the edges of its regexes: blocks left open, calls without <tool_call>, parameters without
// closing tags or '>', typing by the tools' schemas as its coerce_to_schema_type types), and
// streams cut at random points that give the same calls.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "ctxpar/server/qwen3_coder_tool_calls.h"
#include "ctxpar/server/tool_call_parser.h"
#include "support/seeded_rng.h"
#include "tool_call_stream_util.h"

namespace ctxpar::server {
namespace {

using test::expect_content;
using test::expect_split;

using nlohmann::json;

// vLLM's fixture, and a tool with one parameter of each type.
const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_current_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "state": {"type": "string"},
    "unit": {"type": "string", "enum": ["fahrenheit", "celsius"]}}}}},
  {"type": "function", "function": {"name": "calculate_area", "parameters": {
    "type": "object", "properties": {"shape": {"type": "string"},
    "dimensions": {"type": "object"}, "precision": {"type": "integer"}}}}},
  {"type": "function", "function": {"name": "test_types", "parameters": {
    "type": "object", "properties": {"int_param": {"type": "integer"},
    "float_param": {"type": "float"}, "bool_param": {"type": "boolean"},
    "str_param": {"type": "string"}, "obj_param": {"type": "object"},
    "maybe": {"type": ["integer", "null"]}, "any": {}}}}}
])");

ToolCallSplit qwen(std::string_view text, const json& tools = kTools) {
  return split_tool_calls(ToolCallParser::kQwen3Coder, text, tools);
}

std::string param(std::string_view key, std::string_view value) {
  return fmt::format("<parameter={}>\n{}\n</parameter>\n", key, value);
}

std::string call(std::string_view name, std::string_view params) {
  return fmt::format("<tool_call>\n<function={}>\n{}</function>\n</tool_call>", name, params);
}

const std::string kDallas =
    call("get_current_weather",
         param("city", "Dallas") + param("state", "TX") + param("unit", "fahrenheit"));
const char* kDallasArgs = R"({"city": "Dallas", "state": "TX", "unit": "fahrenheit"})";

TEST(Qwen3CoderToolCalls, VllmsCases) {
  const std::nullopt_t null = std::nullopt;
  expect_content(qwen("This is a test response without any tool calls"),
                 "This is a test response without any tool calls");
  expect_split(qwen(kDallas), null, {{"get_current_weather", kDallasArgs}});
  expect_split(qwen("Sure! Let me check the weather for you." + kDallas),
               "Sure! Let me check the weather for you.", {{"get_current_weather", kDallasArgs}});
  expect_split(
      qwen(call("calculate_area", param("shape", "rectangle") +
                                      param("dimensions", "{\"width\": 10, \n \"height\": 20}") +
                                      param("precision", "2"))),
      null,
      {{"calculate_area",
        R"({"shape": "rectangle", "dimensions": {"width": 10, "height": 20}, "precision": 2})"}});
  expect_split(
      qwen(kDallas + "\n" +
           call("get_current_weather",
                param("city", "Orlando") + param("state", "FL") + param("unit", "fahrenheit"))),
      null,
      {{"get_current_weather", kDallasArgs},
       {"get_current_weather", R"({"city": "Orlando", "state": "FL", "unit": "fahrenheit"})"}});
  // No <tool_call> at all: the functions in the whole output.
  expect_split(qwen("<function=get_current_weather>\n" + param("city", "Dallas") +
                    param("state", "TX") + "</function>"),
               null, {{"get_current_weather", R"({"city": "Dallas", "state": "TX"})"}});
  expect_split(
      qwen(call("test_types", param("int_param", "42") + param("float_param", "3.14") +
                                  param("bool_param", "true") + param("str_param", "hello world") +
                                  param("obj_param", R"({"key": "value"})"))),
      null,
      {{"test_types", R"({"int_param": 42, "float_param": 3.14, "bool_param": true, )"
                      R"("str_param": "hello world", "obj_param": {"key": "value"}})"}});
}

TEST(Qwen3CoderToolCalls, TheRegexesEdges) {
  const std::nullopt_t null = std::nullopt;
  // A block left open at the end, and a parameter without </parameter>, still count.
  expect_split(qwen("<tool_call>\n<function=calculate_area>\n<parameter=precision>\n3\n"), null,
               {{"calculate_area", R"({"precision": 3})"}});
  // The next <parameter= or </function> ends a parameter, too.
  expect_split(qwen("<tool_call><function=f><parameter=a>1<parameter=b>2</function></tool_call>"),
               null, {{"f", R"({"a": "1", "b": "2"})"}});
  // Names are as written; a repeated parameter takes its first place and the last value.
  expect_split(
      qwen(call(" f ", param("b", "1") + param("a", "2") + param("b", "3") + param(" a", "4"))),
      null, {{" f ", R"({"b": "3", "a": "2", " a": "4"})"}});
  // One leading and one trailing newline go; more stay.
  expect_split(qwen(call("f", param("s", "\n  x  \n"))), null, {{"f", R"({"s": "\n  x  \n"})"}});
  // Several functions in one block; a function without '>' is skipped.
  expect_split(qwen("<tool_call><function=a></function><function=b</function><function=c>"
                    "</function></tool_call>"),
               null, {{"a", "{}"}, {"c", "{}"}});
  // Content: up to the first <tool_call>, bare functions before it included; blank is null.
  expect_split(qwen("<function=x></function> then " + kDallas), "<function=x></function> then ",
               {{"get_current_weather", kDallasArgs}});
  expect_split(qwen(" \n\t" + kDallas), null, {{"get_current_weather", kDallasArgs}});
  // No <function= anywhere, or only a block without one, or only functions without '>': content.
  for (const std::string& text : {std::string("<tool_call>\n</tool_call>"),
                                  std::string("<tool_call>{\"name\": \"f\"}</tool_call>"),
                                  std::string("<tool_call><function=f</tool_call>"),
                                  std::string("<tool_call></tool_call><function=f>")}) {
    expect_content(qwen(text), text);
  }
  // A parameter without '>' makes vLLM's parser raise: all content, the good calls too.
  const std::string raised = kDallas + call("f", "<parameter=a\n1\n</parameter>\n");
  expect_content(qwen(raised), raised);
}

TEST(Qwen3CoderToolCalls, ValuesAreTypedAsVllm023Types) {
  const auto args = [](std::string_view key, std::string_view value) {
    const ToolCallSplit got = qwen(call("test_types", param(key, value)));
    EXPECT_EQ(got.calls.size(), 1u) << key << "=" << value;
    return got.calls.empty() ? std::string("(no call)") : got.calls[0].arguments;
  };
  EXPECT_EQ(args("int_param", " 1_000 "), R"({"int_param": 1000})");
  EXPECT_EQ(args("int_param", "4.5"), R"({"int_param": 4.5})");    // not an int: JSON
  EXPECT_EQ(args("int_param", "abc"), R"({"int_param": "abc"})");  // not JSON: the text
  EXPECT_EQ(args("float_param", "2.0"), R"({"float_param": 2})");
  EXPECT_EQ(args("float_param", "nan"), R"({"float_param": "nan"})");
  EXPECT_EQ(args("float_param", "NaN"), R"({"float_param": NaN})");  // json.loads takes it
  EXPECT_EQ(args("bool_param", "FALSE"), R"({"bool_param": false})");
  EXPECT_EQ(args("bool_param", "0"), R"({"bool_param": false})");
  EXPECT_EQ(args("obj_param", "[1, Infinity]"), R"({"obj_param": [1, Infinity]})");
  EXPECT_EQ(args("obj_param", "{'a': 1}"), R"({"obj_param": "{'a': 1}"})");
  EXPECT_EQ(args("maybe", "null"), R"({"maybe": null})");
  EXPECT_EQ(args("str_param", "null"), R"({"str_param": "null"})");
  EXPECT_EQ(args("any", "42"), R"({"any": "42"})");      // no type: a string
  EXPECT_EQ(args("other", "42"), R"({"other": "42"})");  // not in the schema: a string
  EXPECT_EQ(qwen(call("test_types", param("int_param", "42")), nullptr).calls[0].arguments,
            R"({"int_param": "42"})");  // without tools every value is a string
  // float("inf") is a float whose int() raises OverflowError: vLLM gives up on the output.
  for (const char* inf : {"inf", "-Infinity", "1e400"}) {
    const std::string text = kDallas + call("test_types", param("float_param", inf));
    expect_content(qwen(text), text);
  }
}

// The output's calls and content when streamed in random pieces, the last one finishing.
ToolCallStream::Delta streamed(std::string_view text, std::mt19937_64& rng) {
  return test::stream_in_random_pieces(ToolCallParser::kQwen3Coder, &kTools, text, rng, 6);
}

TEST(Qwen3CoderToolCalls, RandomlyCutStreamsGiveTheSameCalls) {
  SEEDED_RNG(rng);
  // Each parameter once: a repeated one takes its first place with its last value, which no
  // stream can send in order (StreamedCallsStayValidJson).
  const auto random_call = [&](std::string_view open, std::string_view close) {
    std::string params;
    const bool int_first = rng() % 2 == 0;
    for (int k = static_cast<int>(rng() % 3); k > 0; --k) {
      params += (k == 2) == int_first
                    ? param("int_param", std::to_string(rng() % 100))
                    : fmt::format("<parameter=str_param>{}", rng() % 2 ? "x\n" : "");
    }
    return fmt::format("{}\n<function=test_types>\n{}</function>\n{}", open, params, close);
  };
  for (int round = 0; round < 300; ++round) {
    const std::string before = test::random_text(rng, rng() % 12, "ab <>/tol_c\n");
    if (before.find("<tool_call>") != std::string::npos ||
        before.find("<function=") != std::string::npos) {
      continue;  // a tag drawn by chance
    }
    const bool bare = rng() % 4 == 0;  // calls without <tool_call>
    const int n = static_cast<int>(rng() % 3);
    std::string text = before, outside = before;
    for (int k = 0; k < n; ++k) {
      const bool open_at_end = !bare && k == n - 1 && rng() % 4 == 0;
      text += random_call(bare ? "" : "<tool_call>", bare || open_at_end ? "" : "</tool_call>");
      const std::string between = rng() % 2 ? "\n" : "";
      if (!open_at_end) text += between;
      if (!bare && !open_at_end) outside += between;  // streamed as content, dropped whole
    }
    SCOPED_TRACE(text);
    const ToolCallSplit want = qwen(text);
    ASSERT_EQ(want.calls.size(), static_cast<size_t>(n));
    const ToolCallStream::Delta got = streamed(text, rng);
    test::expect_same_calls(got.calls, want.calls);
    // Bare calls wait for the end and leave the text before them as the content.
    if (bare && n > 0) outside = text.substr(0, text.find("<function="));
    EXPECT_EQ(got.content, n == 0 ? text : outside);
  }
}

// A call whose string parameter is a file streams while it is written: its name goes out at
// once, and the file character by character as it comes (escaped as json.dumps escapes it),
// less a final newline and a partial tag held back; typed parameters go out once closed. What
// went out is always a prefix of the whole call's arguments.
TEST(Qwen3CoderToolCalls, LongStringParametersStreamAsTheyAreWritten) {
  SEEDED_RNG(rng);
  const json tools = json::parse(R"([{"type": "function", "function": {"name": "write_file",
      "parameters": {"type": "object", "properties": {"path": {"type": "string"},
      "content": {"type": "string"}, "mode": {"type": "integer"}}}}}])");
  for (int round = 0; round < 100; ++round) {
    // Characters, not bytes: deltas are whole UTF-8 characters.
    static const char* const kChars[] = {"a", "b", " ", "\n", "\t",     "\"",     "\\",        "<",
                                         ">", "/", "=", "x",  "\u00e9", "\u4e2d", "\U0001F600"};
    std::string file;
    for (size_t n = 200 + rng() % 200; n > 0; --n) file += kChars[rng() % std::size(kChars)];
    if (file.find("</parameter>") != std::string::npos ||
        file.find("<parameter=") != std::string::npos ||
        file.find("</function>") != std::string::npos) {
      continue;
    }
    const std::string text = "Writing it.\n<tool_call>\n<function=write_file>\n" +
                             param("mode", "420") + param("content", file) +
                             param("path", "a.txt") + "</function>\n</tool_call>";
    const ToolCallSplit want = split_tool_calls(ToolCallParser::kQwen3Coder, text, tools);
    ASSERT_EQ(want.calls.size(), 1u);
    const std::string& args = want.calls[0].arguments;
    const test::CharacterStream got =
        test::stream_by_characters(ToolCallParser::kQwen3Coder, &tools, text, rng, 4, want.calls,
                                   /*repeats=*/false, text.find(file) + file.size());
    test::expect_same_calls(got.calls, want.calls);
    // By the time the file is written, all but its last characters went out.
    EXPECT_GE(got.sent_at_mark + 16, args.find(", \"path\"")) << text;
  }
}

// A repeated parameter takes its first place with its last value (vLLM), which no stream can
// send in order: the stream then ends each call as valid JSON, and the whole response is exact.
TEST(Qwen3CoderToolCalls, StreamedCallsStayValidJson) {
  SEEDED_RNG(rng);
  for (int round = 0; round < 200; ++round) {
    std::string params;
    for (int k = static_cast<int>(1 + rng() % 4); k > 0; --k) {
      params += rng() % 2 ? param("int_param", std::to_string(rng() % 100))
                          : param("str_param", test::random_text(rng, rng() % 8, "ab\n\"<"));
    }
    const std::string text = call("test_types", params);
    SCOPED_TRACE(text);
    const ToolCallSplit want = qwen(text);
    ASSERT_EQ(want.calls.size(), 1u);
    const ToolCallStream::Delta got = streamed(text, rng);
    ASSERT_EQ(got.calls.size(), 1u);
    EXPECT_EQ(got.calls[0].name, "test_types");
    const json args = json::parse(got.calls[0].arguments);  // throws if not JSON
    EXPECT_TRUE(args.is_object());
    if (params.find("int_param") == params.rfind("<parameter=int_param") &&
        params.find("str_param") == params.rfind("<parameter=str_param")) {
      EXPECT_EQ(got.calls[0].arguments, want.calls[0].arguments);  // no repeat: exact
    }
  }
}

TEST(Qwen3CoderToolCalls, StreamsWaitWhereVllmReadsLater) {
  SEEDED_RNG(rng);
  // A bare function followed by a block: vLLM reads only the block, the function is content.
  const std::string mixed = "Hi <function=x>\n</function>\n" + kDallas;
  ToolCallStream::Delta got = streamed(mixed, rng);
  EXPECT_EQ(got.content, "Hi <function=x>\n</function>\n");
  test::expect_same_calls(got.calls, qwen(mixed).calls);
  // A block that holds no call goes out as content, tags and all.
  const std::string nothing = "<tool_call>nothing</tool_call>b";
  got = streamed(nothing, rng);
  EXPECT_TRUE(got.calls.empty());
  EXPECT_EQ(got.content, nothing);
  // One that vLLM cannot read (a parameter without '>') is content whole; streamed, its call
  // went out before that was known, and ends as the JSON it had.
  const std::string raises = std::string("a").append(call("f", "<parameter=x\n1\n"));
  expect_content(qwen(raises), raises);
  got = streamed(raises, rng);
  EXPECT_EQ(got.content, "a");
  ASSERT_EQ(got.calls.size(), 1u);
  EXPECT_EQ(got.calls[0].name, "f");
  EXPECT_EQ(got.calls[0].arguments, "{}");
  // Before a bare function comes, text goes out at once.
  ToolCallStream stream(ToolCallParser::kQwen3Coder, &kTools);
  EXPECT_EQ(stream.add("Let me see. <func", false).content, "Let me see. ");
  EXPECT_EQ(stream.add("tion=f>\n</function>", false).content, "");
  const ToolCallStream::Delta end = stream.add("\n", true);
  EXPECT_EQ(end.content, "");
  ASSERT_EQ(end.calls.size(), 1u);
  EXPECT_EQ(end.calls[0].name, "f");
}

}  // namespace
}  // namespace ctxpar::server
