// --tool-call-parser deepseek_v32 (DeepSeek-V3.2's DSML): whole outputs split as vLLM's parser
// splits them (its docstring's example, typing by string="true|false" and the tools' schemas,
// the arguments / input wrapper, broken invokes and blocks), coerce_to_schema_type on the cases
// of vLLM's tests/tool_parsers/test_deepseekv32_tool_parser.py as vLLM's newest coercion answers
// them, and streams cut at random points that give the same calls.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "ctxpar/server/tool_call_parser.h"
#include "ctxpar/server/tool_schema.h"
#include "support/seeded_rng.h"
#include "tool_call_stream_util.h"

namespace ctxpar::server {
namespace {

using nlohmann::json;
using ordered_json = nlohmann::ordered_json;

constexpr std::string_view kOpen = "<｜DSML｜function_calls>", kClose = "</｜DSML｜function_calls>";

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"location": {"type": "string"}, "date": {"type": "string"},
                   "days": {"type": "integer"}, "metric": {"type": "boolean"},
                   "filters": {"type": "object"}, "ratio": {"type": ["number", "null"]}}}}},
  {"type": "function", "function": {"name": "search", "parameters": {"type": "object",
    "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}}}}
])");

ToolCallSplit dsml(std::string_view text, const json& tools = kTools) {
  return split_tool_calls(ToolCallParser::kDeepSeekV32, text, tools);
}

std::string param(std::string_view name, std::string_view value, bool string = true) {
  return fmt::format("<｜DSML｜parameter name=\"{}\" string=\"{}\">{}</｜DSML｜parameter>\n", name,
                     string ? "true" : "false", value);
}
std::string invoke(std::string_view name, std::string_view params) {
  return fmt::format("<｜DSML｜invoke name=\"{}\">\n{}</｜DSML｜invoke>\n", name, params);
}
std::string block(std::string_view invokes) {
  return std::string(kOpen) + "\n" + std::string(invokes) + std::string(kClose);
}

// The arguments of the one call of a block holding one invoke of `params`.
std::string args(std::string_view name, std::string_view params, const json& tools = kTools) {
  const ToolCallSplit got = dsml(block(invoke(name, params)), tools);
  EXPECT_EQ(got.calls.size(), 1u) << params;
  return got.calls.empty() ? "(no call)" : got.calls[0].arguments;
}

TEST(DsmlToolCalls, WholeOutputsSplitAsVllmSplitsThem) {
  // vLLM's docstring example: two invokes in one block, string parameters.
  const ToolCallSplit two =
      dsml("查一下。\n" +
           block(invoke("get_weather", param("location", "杭州") + param("date", "2024-01-16")) +
                 invoke("get_weather", param("location", "北京") + param("date", "2024-01-16"))));
  EXPECT_EQ(two.content, "查一下。\n");
  ASSERT_EQ(two.calls.size(), 2u);
  EXPECT_EQ(two.calls[0].name, "get_weather");
  EXPECT_EQ(two.calls[0].arguments, R"({"location": "杭州", "date": "2024-01-16"})");
  EXPECT_EQ(two.calls[1].arguments, R"({"location": "北京", "date": "2024-01-16"})");
  EXPECT_EQ(two.calls[0].id.rfind("chatcmpl-tool-", 0), 0u);
  EXPECT_NE(two.calls[0].id, two.calls[1].id);
  // No text, or only whitespace, before the block: null content (vLLM's chat serving).
  EXPECT_EQ(dsml(block(invoke("search", ""))).content, std::nullopt);
  EXPECT_EQ(dsml(" \n" + block(invoke("search", ""))).content, std::nullopt);
  EXPECT_EQ(dsml(block(invoke("search", ""))).calls[0].arguments, "{}");
  // Calls of every block; text after the first block is dropped.
  const ToolCallSplit blocks = dsml(block(invoke("search", param("query", "a"))) + "between" +
                                    block(invoke("search", param("query", "b"))) + "after");
  ASSERT_EQ(blocks.calls.size(), 2u);
  EXPECT_EQ(blocks.calls[1].arguments, R"({"query": "b"})");
  // Without a complete block, or a complete invoke in one, all is content.
  for (const std::string& text :
       {std::string("no calls"), std::string(kOpen) + invoke("search", ""),
        block("<｜DSML｜invoke name=\"search\">" + param("query", "a")),
        block("<｜DSML｜invoke name=\"\"></｜DSML｜invoke>"),
        block("<｜DSML｜invokename=\"search\"></｜DSML｜invoke>"),
        block("<｜DSML｜invoke name='search'></｜DSML｜invoke>"), block("plain text"),
        std::string(kClose)}) {
    const ToolCallSplit got = dsml(text);
    EXPECT_TRUE(got.calls.empty()) << text;
    EXPECT_EQ(got.content, text);
  }
  // A broken invoke beside a good one is skipped; so is a broken parameter.
  const ToolCallSplit mixed =
      dsml(block("<｜DSML｜invoke name=search></｜DSML｜invoke>" +
                 invoke("search", param("query", "a") + "<｜DSML｜parameter name=\"limit\" "
                                                        "string=\"yes\">3</｜DSML｜parameter>")));
  ASSERT_EQ(mixed.calls.size(), 1u);
  EXPECT_EQ(mixed.calls[0].arguments, R"({"query": "a"})");
  // Whitespace in the tags, as the regexes allow it.
  EXPECT_EQ(dsml(block("<｜DSML｜invoke\n  name=\"search\" ><｜DSML｜parameter  name=\"limit\"\n"
                       "string=\"false\"  >7</｜DSML｜parameter></｜DSML｜invoke>"))
                .calls[0]
                .arguments,
            R"({"limit": 7})");
}

TEST(DsmlToolCalls, ValuesAreTypedByStringAndTheSchema) {
  // string="true": the text as written, whatever the schema says.
  EXPECT_EQ(args("get_weather", param("days", " 3 ")), R"({"days": " 3 "})");
  // string="false": the parameter's schema types it.
  EXPECT_EQ(args("get_weather", param("days", " 3 ", false) + param("metric", "TRUE", false) +
                                    param("filters", R"({"a": [1, 2.0]})", false) +
                                    param("ratio", "2.0", false)),
            R"({"days": 3, "metric": true, "filters": {"a": [1, 2.0]}, "ratio": 2})");
  EXPECT_EQ(args("get_weather", param("ratio", "NULL", false) + param("days", "x", false)),
            R"({"ratio": null, "days": "x"})");
  // A parameter the schema does not name, or an unknown tool, stays text.
  EXPECT_EQ(args("get_weather", param("other", "5", false)), R"({"other": "5"})");
  EXPECT_EQ(args("unknown", param("n", "5", false)), R"({"n": "5"})");
  // A repeated parameter keeps its first place and takes the last value.
  EXPECT_EQ(args("search", param("query", "a") + param("limit", "1", false) + param("query", "b")),
            R"({"query": "b", "limit": 1})");
  // A lone `arguments` / `input` wrapper the schema does not name is unwrapped when its keys
  // are the schema's; otherwise it stays.
  EXPECT_EQ(args("search", param("arguments", R"({"query": "q", "limit": 2})")),
            R"({"query": "q", "limit": 2})");
  EXPECT_EQ(args("search", param("input", R"({"query": "q"})", false)), R"({"query": "q"})");
  EXPECT_EQ(args("search", param("arguments", R"({"other": 1})")),
            R"({"arguments": "{\"other\": 1}"})");
  EXPECT_EQ(args("search", param("arguments", "not json")), R"({"arguments": "not json"})");
  EXPECT_EQ(args("search", param("arguments", R"({"query": "q"})") + param("limit", "1", false)),
            R"({"arguments": "{\"query\": \"q\"}", "limit": 1})");
}

TEST(DsmlToolCalls, CoercionAsVllmsCoerceToSchemaType) {
  const auto coerce = [](std::string_view value, std::vector<std::string> types) {
    return coerce_to_schema_type(value, types).dump();
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(coerce("hello", {"string"}), R"("hello")");
  EXPECT_EQ(coerce("123", {"string"}), R"("123")");
  EXPECT_EQ(coerce("123", {"integer"}), "123");
  EXPECT_EQ(coerce("456", {"int"}), "456");
  EXPECT_EQ(coerce("  123  ", {"integer"}), "123");
  EXPECT_EQ(coerce("1_000", {"integer"}), "1000");
  EXPECT_EQ(coerce("-7", {"INT64"}), "-7");
  EXPECT_EQ(coerce("abc", {"integer"}), R"("abc")");
  EXPECT_EQ(coerce("123abc", {"integer"}), R"("123abc")");
  EXPECT_EQ(coerce("", {"integer"}), R"("")");
  EXPECT_EQ(coerce("123.45", {"float"}), "123.45");
  EXPECT_EQ(coerce("123.0", {"number"}), "123");  // a whole number is an int
  EXPECT_EQ(coerce("1e3", {"number"}), "1000");
  EXPECT_EQ(coerce(".5", {"double"}), "0.5");
  EXPECT_EQ(coerce("123.45.67", {"float"}), R"("123.45.67")");
  EXPECT_EQ(coerce("inf", {"number"}), R"("inf")");  // not finite: the text
  EXPECT_EQ(coerce("nan", {"number"}), R"("nan")");
  EXPECT_EQ(coerce("true", {"boolean"}), "true");
  EXPECT_EQ(coerce("false", {"bool"}), "false");
  EXPECT_EQ(coerce("1", {"boolean"}), "true");
  EXPECT_EQ(coerce("0", {"boolean"}), "false");
  EXPECT_EQ(coerce("  TRUE  ", {"boolean"}), "true");
  EXPECT_EQ(coerce("yes", {"boolean"}), R"("yes")");
  EXPECT_EQ(coerce("null", {"null", "string"}), "null");
  EXPECT_EQ(coerce("null", {"string"}), R"("null")");  // null only where the schema allows it
  EXPECT_EQ(coerce(R"({"key": "value"})", {"object"}), R"({"key":"value"})");
  EXPECT_EQ(coerce("[1, 2, 3]", {"array"}), "[1,2,3]");
  EXPECT_EQ(coerce("  { \"key\" : \"value\" }  ", {"dict"}), R"({"key":"value"})");
  EXPECT_EQ(coerce("{invalid}", {"object"}), R"("{invalid}")");
  EXPECT_EQ(coerce("[1, 2,", {"array"}), R"("[1, 2,")");
  EXPECT_EQ(coerce("[1e999]", {"array"}), R"("[1e999]")");
  // Unknown types: finite JSON, else the text.
  EXPECT_EQ(coerce(R"({"key": "value"})", {"unknown"}), R"({"key":"value"})");
  EXPECT_EQ(coerce("plain text", {"unknown"}), R"("plain text")");
  // Several types: the fixed priority null, integer, number, boolean, object, array, string.
  EXPECT_EQ(coerce("123", {"string", "integer"}), "123");
  EXPECT_EQ(coerce("abc", {"integer", "string"}), R"("abc")");
  EXPECT_EQ(coerce("true", {"boolean", "string"}), "true");
  EXPECT_EQ(coerce("123", {"boolean", "integer", "string"}), "123");
  EXPECT_EQ(coerce("123.5", {"integer", "float", "string"}), "123.5");
  EXPECT_EQ(coerce("not_a_number", {"integer", "float", "boolean"}), R"("not_a_number")");
  EXPECT_EQ(coerce("invalid json", {"integer", "object"}), R"("invalid json")");
  // The types of a schema.
  EXPECT_EQ(schema_types(json::parse(R"({"type": "integer"})")), V{"integer"});
  EXPECT_EQ(schema_types(json::parse(R"({"type": ["string", "null"]})")), (V{"null", "string"}));
  EXPECT_EQ(schema_types(json::parse(R"({"enum": [1, 2.5, "a", null, true, [1], {}]})")),
            (V{"array", "boolean", "integer", "null", "number", "object", "string"}));
  EXPECT_EQ(schema_types(json::parse(R"({"anyOf": [{"type": "integer"}, {}]})")),
            (V{"integer", "string"}));
  EXPECT_EQ(schema_types(json::parse("{}")), V{"string"});
  EXPECT_EQ(schema_types(json::parse("[1]")), V{"string"});
}

TEST(DsmlToolCalls, RandomlyCutStreamsGiveTheSameCalls) {
  SEEDED_RNG(rng);
  for (int round = 0; round < 200; ++round) {
    std::string text = rng() % 2 ? "Let me check.\n" : "";
    const int blocks = static_cast<int>(rng() % 3);
    for (int b = 0; b < blocks; ++b) {
      std::string invokes;
      for (int k = static_cast<int>(rng() % 3); k > 0; --k) {
        invokes += invoke(rng() % 2 ? "get_weather" : "search",
                          param("query", fmt::format("q{}", rng() % 100)) +
                              param("limit", fmt::format("{}", rng() % 10), false) +
                              param("days", "[1, 2]", rng() % 2 == 0));
      }
      text += block(invokes) + (rng() % 2 ? "\n" : "");
    }
    SCOPED_TRACE(text);
    const ToolCallSplit want = dsml(text);
    const ToolCallStream::Delta got =
        test::stream_in_random_pieces(ToolCallParser::kDeepSeekV32, &kTools, text, rng, 9);
    const std::string& content = got.content;
    test::expect_same_calls(got.calls, want.calls);
    if (want.calls.empty()) {
      // A block without invokes is no call: streamed, its text is content too.
      EXPECT_EQ(content, text);
    } else {
      EXPECT_EQ(content.substr(0, want.content.value_or("").size()), want.content.value_or(""));
    }
  }
  // A block left open when the output ends is content.
  ToolCallStream stream(ToolCallParser::kDeepSeekV32, &kTools);
  const std::string open = "a" + std::string(kOpen) + invoke("search", "");
  const ToolCallStream::Delta d = stream.add(open, true);
  EXPECT_EQ(d.content, open);
  EXPECT_TRUE(d.calls.empty());
}

// DeepSeek-V3.2 writing a long string="true" value: the call goes out once its invoke header is
// whole, the value as it is written, a typed parameter once it closes; what went out is always a
// prefix of the whole call's arguments, and a repeated parameter ends the call as valid JSON.
TEST(DsmlToolCalls, StringParametersStreamAsTheyAreWritten) {
  SEEDED_RNG(rng);
  static const char* const kChars[] = {"a",      " ",      "\n",         "\"",
                                       "\\",     "<",      ">",          "/",
                                       "\u00e9", "\u676d", "\U0001F600", "<｜DSML｜invoke"};
  for (int round = 0; round < 100; ++round) {
    std::string value;
    for (size_t n = 50 + rng() % 100; n > 0; --n) value += kChars[rng() % std::size(kChars)];
    const bool repeat = rng() % 4 == 0;
    const std::string text =
        "Searching.\n" + block(invoke("search", param("limit", "3", false) + param("query", value) +
                                                    (repeat ? param("limit", "4", false) : "")) +
                               invoke("get_weather", param("location", "Paris")));
    SCOPED_TRACE(text);
    const ToolCallSplit want = dsml(text);
    ASSERT_EQ(want.calls.size(), 2u);
    const test::CharacterStream got =
        test::stream_by_characters(ToolCallParser::kDeepSeekV32, &kTools, text, rng, 5, want.calls,
                                   repeat, text.find("</｜DSML｜parameter>", text.find(value)));
    ASSERT_EQ(got.calls.size(), 2u);
    for (const ToolCallPiece& call : got.calls) {
      EXPECT_TRUE(json::parse(call.arguments).is_object());
    }
    if (repeat) continue;
    test::expect_same_calls(got.calls, want.calls);
    EXPECT_GE(got.sent_at_mark + 32, want.calls[0].arguments.size());  // less a partial tag
  }
}

}  // namespace
}  // namespace ctxpar::server
