// --tool-call-parser llama3_json (Llama 3.1 / 3.2 / 3.3): whole outputs split as vLLM's
// llama_tool_parser.py splits them (the cases of vLLM's test_llama3_json_tool_parser.py, and the
// edges of its scan: text around the objects, adjacent objects, objects that are no call, JSON as
// Python reads it), Python's JSON reader itself, and streams cut at random points that add up to
// the whole output's split.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "ctxpar/server/llama_tool_calls.h"
#include "ctxpar/server/python_json.h"
#include "ctxpar/server/python_json_decode.h"
#include "ctxpar/server/tool_call_parser.h"
#include "support/seeded_rng.h"
#include "tool_call_stream_util.h"

namespace ctxpar::server {
namespace {

using test::expect_content;
using test::expect_split;

ToolCallSplit llama(std::string_view text) {
  return split_tool_calls(ToolCallParser::kLlama3Json, text, nullptr);
}

// Calls named `names` with arguments `args`, and null content.
// The calls (names[k] with args[k]), with null content (llama3_json keeps no text).
void expect_calls(const ToolCallSplit& got, const std::vector<std::string>& names,
                  const std::vector<std::string>& args) {
  ASSERT_EQ(names.size(), args.size());
  std::vector<std::pair<std::string, std::string>> calls;
  for (size_t k = 0; k < names.size(); ++k) calls.emplace_back(names[k], args[k]);
  expect_split(got, std::nullopt, calls);
}

TEST(LlamaToolCalls, VllmsCases) {
  // Text around a call is dropped: the content is null.
  expect_calls(llama("Here is the result: {\"name\": \"getOpenIncidentsTool\", \"parameters\": "
                     "{}} Would you like to know more?"),
               {"getOpenIncidentsTool"}, {"{}"});
  expect_calls(
      llama(R"({"name": "searchTool", "parameters": {"query": "test query", "limit": 10}})"),
      {"searchTool"}, {R"({"query": "test query", "limit": 10})"});
  expect_content(llama("This is just some text without any tool calls"),
                 "This is just some text without any tool calls");
  const char* invalid = R"({"name": "invalidTool", "parameters": {invalid json})";
  expect_content(llama(invalid), invalid);
  expect_calls(llama(R"({"name": "searchTool", "arguments": {"query": "test"}})"), {"searchTool"},
               {R"({"query": "test"})"});
  // Several calls: the `;` and the space around them do not matter, nor does the text around.
  const auto two = [](std::string_view sep) {
    return fmt::format(R"(Here: {{"name": "searchTool", "parameters": {{"query": "test1"}}}})"
                       R"({}{{"name": "getOpenIncidentsTool", "parameters": {{}}}} Would you?)",
                       sep);
  };
  for (const char* sep : {"; ", " ; ", ";", "\n"}) {
    expect_calls(llama(two(sep)), {"searchTool", "getOpenIncidentsTool"},
                 {R"({"query": "test1"})", "{}"});
  }
  // Right after an object its `{` is skipped, so the next `{` read is the inner {}: no call.
  expect_content(llama(two("")), two(""));
  // Nesting, and braces, brackets and escaped quotes inside strings.
  expect_calls(llama(R"({"name": "complexTool", "parameters": {"level1": {"level2": {"level3": )"
                     R"({"level4": {"value": "deep"}}}}}})"),
               {"complexTool"},
               {R"({"level1": {"level2": {"level3": {"level4": {"value": )"
                R"("deep"}}}}})"});
  expect_calls(llama(R"({"name": "searchTool", "parameters": {"query": "test {value} [complex]",)"
                     R"("nested": {"inner": "more {brackets}"}}})"),
               {"searchTool"},
               {R"({"query": "test {value} [complex]", "nested": {"inner": "more {brackets}"}})"});
  expect_calls(
      llama(R"({"name": "parserTool", "parameters": {"text": "He said \"Hello {world}\""}})"),
      {"parserTool"}, {R"({"text": "He said \"Hello {world}\""})"});
  // An object without "name", or without "arguments" and "parameters": all content.
  expect_content(llama(R"({"parameters": {}})"), R"({"parameters": {}})");
  expect_content(llama(R"({"name": "toolWithoutParams"})"), R"({"name": "toolWithoutParams"})");
  // vLLM 0.23-0.33 give up on a later `{` that is no call too (0.34's parser keeps the call).
  for (const char* text :
       {R"({"name": "searchTool", "parameters": {"query": "test"}} I used {searchTool} for this.)",
        R"({"name": "searchTool", "parameters": {"query": "test"}} I passed {"query": "test"})"}) {
    expect_content(llama(text), text);
  }
}

TEST(LlamaToolCalls, TheScanAsVllmReadsTheOutput) {
  // <|python_tag|> is text like any other.
  expect_calls(llama("<|python_tag|>{\"name\": \"f\", \"parameters\": {\"a\": 1}}"), {"f"},
               {R"({"a": 1})"});
  expect_content(llama("<|python_tag|>print(1)"), "<|python_tag|>print(1)");
  // "arguments" wins over "parameters"; any value is the arguments, as json.dumps writes it.
  expect_calls(llama(R"({"parameters": 1, "arguments": {"b":2.50,"a":"é"}, "name": "f"})"), {"f"},
               {R"({"b": 2.5, "a": "é"})"});
  expect_calls(llama(R"({"name": "f", "arguments": "{\"x\": 1}"}; {"name": "g", "arguments":)"
                     R"( null}; {"name": "h", "parameters": [1, NaN, -Infinity, 1e400]})"),
               {"f", "g", "h"}, {R"("{\"x\": 1}")", "null", "[1, NaN, -Infinity, Infinity]"});
  // A repeated key: first place, last value.
  expect_calls(llama(R"({"name": "f", "parameters": {"k": 1, "j": 2, "k": 3}})"), {"f"},
               {R"({"k": 3, "j": 2})"});
  // A name that is not a string is refused (pydantic), so is an object left open at the end.
  for (const char* text : {R"({"name": 7, "parameters": {}})",
                           R"({"name": "f", "parameters": {}}; {"name": "g", "parameters": {)",
                           "{\"name\": \"f\", \"parameters\": {\"s\": \"a\tb\"}}"}) {
    expect_content(llama(text), text);
  }
  // Only the `{` just past an object is skipped: one more character and it is read again.
  expect_content(llama(R"({"name": "f", "parameters": {}} {oops})"),
                 R"({"name": "f", "parameters": {}} {oops})");
  expect_calls(llama(R"({"name": "f", "parameters": {}}{oops)"), {"f"}, {"{}"});
}

TEST(LlamaToolCalls, PythonJsonReader) {
  using Status = PythonJsonValue::Status;
  const auto read = [](std::string_view text) { return python_json_raw_decode(text, 0); };
  const auto dumped = [&](std::string_view text) {
    const PythonJsonValue v = read(text);
    EXPECT_EQ(v.status, Status::kOk) << text;
    return python_json_text(v.value);
  };
  EXPECT_EQ(dumped(R"({"a": [1, 2.0, -0, -0.0, 1E2, true, null], "b": "\u00e9\ud83d\ude00\/"})"),
            R"({"a": [1, 2.0, 0, -0.0, 100.0, true, null], "b": "é😀/"})");
  EXPECT_EQ(dumped("18446744073709551615"), "18446744073709551615");
  EXPECT_EQ(read(R"({"a": 1} tail)").end, 8u);
  // Where the value ends: a '.' or exponent without digits is not the number's.
  EXPECT_EQ(read("12.x").end, 2u);
  EXPECT_EQ(read("1e+").end, 1u);
  EXPECT_EQ(read("01").status, Status::kOk);
  for (const char* text : {"{\"a\": 1,}", "[1,]", "{'a': 1}", "{\"a\" 1}", "-", "tru", "\"\\x\"",
                           "\"a\nb\"", "\"\\ud800\"", "{a}", "+1", ".5", "{\"a\": 1.x}"}) {
    EXPECT_EQ(read(text).status, Status::kInvalid) << text;
  }
  // Cut inside brackets: more text could finish it.
  for (const char* text : {"{", "{\"a", "{\"a\": ", "{\"a\": 1", "{\"a\": 1.", "{\"a\": 1e",
                           "{\"a\": -", "{\"a\": -Inf", "[tr", "[\"\\u00", "[\"\\ud83d"}) {
    EXPECT_EQ(read(text).status, Status::kIncomplete) << text;
  }
  std::string deep(901, '[');
  EXPECT_EQ(read(deep + std::string(901, ']')).status, Status::kInvalid);
  deep = std::string(900, '[') + std::string(900, ']');
  EXPECT_EQ(read(deep).status, Status::kOk);
}

// A random output: text, calls with separators, maybe a `{` that is no call, maybe cut short.
std::string random_output(std::mt19937_64& rng) {
  static const char* kSeps[] = {"; ", ";", " ; ", "\n", ";\n"};
  static const char* kNoCalls[] = {"{oops}", R"({"query": "x"})", "{\"name\": 1, \"arguments\": 2}",
                                   "{", "{\"name\": \"f\""};
  std::string text = test::random_text(rng, rng() % 12, "ab <|>_;:\n\"[]");
  if (rng() % 4 == 0) text += "<|python_tag|>";
  const int n = static_cast<int>(rng() % 4);
  for (int k = 0; k < n; ++k) {
    if (k > 0) text += kSeps[rng() % 5];
    text += fmt::format(R"({{"name": "f{}", "{}": {{"k": [{}, "{{x}}", {{"n": null}}]}}}})",
                        rng() % 10, rng() % 2 ? "parameters" : "arguments", k);
  }
  if (rng() % 3 == 0) text += test::random_text(rng, rng() % 8, "ab .!");
  if (rng() % 4 == 0) text += kNoCalls[rng() % 5];
  if (rng() % 5 == 0 && !text.empty()) text.resize(rng() % text.size());
  return text;
}

TEST(LlamaToolCalls, RandomlyCutStreamsAddUpToTheWholeSplit) {
  SEEDED_RNG(rng);
  for (int round = 0; round < 500; ++round) {
    const std::string text = random_output(rng);
    SCOPED_TRACE(text);
    const ToolCallSplit want = llama(text);
    const ToolCallStream::Delta got =
        test::stream_in_random_pieces(ToolCallParser::kLlama3Json, nullptr, text, rng, 7);
    test::expect_same_calls(got.calls, want.calls);
    // With calls, the text before the first `{` has gone out as content (see the header).
    EXPECT_EQ(got.content, want.calls.empty() ? text : text.substr(0, text.find('{')));
  }
  // Text goes out as it comes until a `{`; from there it waits until a call is ruled out.
  ToolCallStream stream(ToolCallParser::kLlama3Json);
  EXPECT_EQ(stream.add("Sure: ", false).content, "Sure: ");
  EXPECT_EQ(stream.add(R"({"name": "f", "parameters": {}}; )", false).content, "");
  EXPECT_EQ(stream.add("{\"nam", false).content, "");
  const ToolCallStream::Delta ruled_out = stream.add("x\": 1} more", false);
  EXPECT_EQ(ruled_out.content, R"({"name": "f", "parameters": {}}; {"namx": 1} more)");
  EXPECT_TRUE(ruled_out.calls.empty());
  EXPECT_EQ(stream.add(" {\"name\": \"g\", \"parameters\": {}}", true).content,
            " {\"name\": \"g\", \"parameters\": {}}");
  EXPECT_EQ(stream.calls_sent(), 0);
}

TEST(LlamaToolCalls, LongOutputsStreamAsWhole) {
  SEEDED_RNG(rng);
  // Past 1 KiB the stream scans its held text less often; the split at the end is the same.
  const std::string code = test::random_text(rng, 6000, "abc =+()[]{};:,.\n");
  const std::string call =
      R"({"name": "run", "parameters": {"code": )" + nlohmann::json(code).dump() + "}}";
  for (const std::string& text :
       {call, call + "; " + call, call + " then {not json", "Here is code: " + code}) {
    const ToolCallSplit want = llama(text);
    const ToolCallStream::Delta got =
        test::stream_in_random_pieces(ToolCallParser::kLlama3Json, nullptr, text, rng, 9);
    test::expect_same_calls(got.calls, want.calls);
    EXPECT_EQ(got.content, want.calls.empty() ? text : "");
  }
  EXPECT_EQ(llama(call + "; " + call).calls.size(), 2u);
}

TEST(LlamaToolCalls, KeepsSpecialTokensOnlyWhereVllmDoes) {
  EXPECT_FALSE(tool_call_parser_keeps_special_tokens(ToolCallParser::kLlama3Json));
  EXPECT_FALSE(tool_call_parser_keeps_special_tokens(ToolCallParser::kNone));
  EXPECT_TRUE(tool_call_parser_keeps_special_tokens(ToolCallParser::kHermes));
}

}  // namespace
}  // namespace ctxpar::server
