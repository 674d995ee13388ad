// Structured outputs on the OpenAI routes: which request fields make which grammar, the 400s,
// and the tool calls a forced tool choice's output becomes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "ctxpar/engine/structured/json_matcher.h"
#include "ctxpar/server/api_error.h"
#include "ctxpar/server/output_constraint.h"
#include "ctxpar/server/tool_choice_output.h"
#include "support/seeded_rng.h"

namespace ctxpar::server {
namespace {

using json = nlohmann::ordered_json;

bool accepts(const OutputConstraint& c, const std::string& text) {
  structured::JsonMatcher m(c.automaton);
  return m.accept(text) && m.can_end();
}

// The 400's message (and param), or "" when the body is accepted.
std::string error_of(const char* body, bool chat = true, std::string* param = nullptr) {
  try {
    parse_output_constraint(json::parse(body), chat);
  } catch (const ApiError& e) {
    if (param)
      *param = e.to_json()["error"]["param"].is_string()
                   ? e.to_json()["error"]["param"].get<std::string>()
                   : "";
    return e.what();
  }
  return "";
}

const char* kTools = R"([{"type": "function", "function": {"name": "f", "parameters": {
    "type": "object", "properties": {"b": {"type": "integer"}, "a": {"$ref": "#/$defs/A"}},
    "$defs": {"A": {"type": "boolean"}}}}}, {"type": "function", "function": {"name": "g"}}])";

TEST(OutputConstraint, ResponseFormatAndStructuredOutputs) {
  EXPECT_EQ(parse_output_constraint(json::parse(R"({"prompt": "x"})"), false).automaton, nullptr);
  EXPECT_EQ(parse_output_constraint(json::parse(R"({"response_format": {"type": "text"}})"), false)
                .automaton,
            nullptr);
  const auto object =
      parse_output_constraint(json::parse(R"({"response_format": {"type": "json_object"}})"), true);
  EXPECT_TRUE(accepts(object, R"({"k": [1]})"));
  EXPECT_FALSE(accepts(object, "[1]"));
  // The schema's property order is the output's (the body keeps its key order).
  const auto schema = parse_output_constraint(json::parse(R"({"response_format": {"type":
      "json_schema", "json_schema": {"name": "n", "schema": {"type": "object", "properties":
      {"z": {"type": "integer"}, "a": {"type": "integer"}}}}}})"),
                                              false);
  EXPECT_TRUE(accepts(schema, R"({"z": 1, "a": 2})"));
  EXPECT_FALSE(accepts(schema, R"({"a": 2, "z": 1})"));
  const auto so = parse_output_constraint(
      json::parse(R"({"structured_outputs": {"json": "{\"type\": \"boolean\"}"}})"), false);
  EXPECT_TRUE(accepts(so, "true"));
  // response_format wins; disable_any_whitespace applies to it.
  const auto both = parse_output_constraint(json::parse(R"({"structured_outputs": {"json":
      {"type": "boolean"}, "disable_any_whitespace": true}, "response_format": {"type":
      "json_object"}})"),
                                            false);
  EXPECT_TRUE(accepts(both, R"({"a": 1, "b": 2})"));
  EXPECT_FALSE(accepts(both, R"({"a":1})"));
  EXPECT_FALSE(accepts(both, "true"));
}

TEST(OutputConstraint, Refusals) {
  std::string param;
  EXPECT_NE(error_of(R"({"response_format": {"type": "json_schema", "json_schema": {"name": "n",
      "schema": {"type": "string", "pattern": "(a"}}}})",
                     false, &param)
                .find("`pattern` \"(a\": regex: missing ), unterminated subpattern at position 0"),
            std::string::npos);
  EXPECT_EQ(param, "response_format");
  EXPECT_NE(error_of(R"({"response_format": {"type": "json_schema"}})").find("'json_schema'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"structured_outputs": {"regex": "a\\1"}})", false, &param)
                .find("structured_outputs.regex: a backreference is not supported at position 1"),
            std::string::npos);
  EXPECT_EQ(param, "structured_outputs");
  EXPECT_NE(error_of(R"({"structured_outputs": {"grammar": "root ::= \"a\""}})", false, &param)
                .find("structured_outputs.grammar is not supported"),
            std::string::npos);
  EXPECT_EQ(param, "structured_outputs");
  EXPECT_NE(error_of(R"({"structured_outputs": {"json": {}, "choice": ["a"]}})").find("one kind"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"guided_json": {"type": "object"}})", false, &param).find("removed"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"guided_regex": "a+"})").find(R"(use structured_outputs {"regex": ...})"),
            std::string::npos);
  EXPECT_EQ(param, "guided_json");
  EXPECT_NE(error_of(R"({"response_format": {"type": "structural_tag"}})").find("structural_tag"),
            std::string::npos);
  const std::string named = std::string(R"({"tools": )") + kTools +
                            R"(, "tool_choice": {"type": "function", "function": {"name": "f"}},
                               "structured_outputs": {"json": {}}})";
  EXPECT_NE(error_of(named.c_str()).find("not both"), std::string::npos);
}

TEST(OutputConstraint, RequiredAndNamedToolChoices) {
  const json tools = json::parse(kTools);
  const json schema = required_tools_schema(tools);
  EXPECT_EQ(schema["minItems"], 1);
  EXPECT_EQ(schema["$defs"]["A"]["type"], "boolean");  // the tools' $defs, at the root
  EXPECT_FALSE(schema["items"]["anyOf"][0]["properties"]["parameters"].contains("$defs"));
  json clash = tools;
  clash[1]["function"]["parameters"] = json::parse(R"({"$defs": {"A": {"type": "null"}}})");
  EXPECT_THROW(required_tools_schema(clash), ApiError);

  const auto required = parse_output_constraint(
      json::parse(std::string(R"({"tools": )") + kTools + R"(, "tool_choice": "required"})"), true);
  EXPECT_EQ(required.tools, ForcedToolChoice::kRequired);
  EXPECT_TRUE(accepts(required, R"([{"name": "f", "parameters": {"b": 1, "a": true}},
                                    {"name": "g", "parameters": {}}])"));
  EXPECT_FALSE(accepts(required, "[]"));
  EXPECT_FALSE(accepts(required, R"([{"name": "h", "parameters": {}}])"));
  EXPECT_FALSE(accepts(required, R"([{"name": "g", "parameters": {"x": 1}}])"));
  // Not on /v1/completions.
  EXPECT_EQ(parse_output_constraint(json::parse(std::string(R"({"tools": )") + kTools +
                                                R"(, "tool_choice": "required"})"),
                                    false)
                .automaton,
            nullptr);

  const auto named = parse_output_constraint(
      json::parse(std::string(R"({"tools": )") + kTools +
                  R"(, "tool_choice": {"type": "function", "function": {"name": "f"}}})"),
      true);
  EXPECT_EQ(named.tools, ForcedToolChoice::kNamed);
  EXPECT_EQ(named.tool_name, "f");
  EXPECT_TRUE(accepts(named, R"({"b": 2, "a": false})"));
  EXPECT_FALSE(accepts(named, R"({"a": false, "b": 2})"));
}

TEST(ToolChoiceOutput, CallsOfTheOutput) {
  const auto named = forced_tool_calls(ForcedToolChoice::kNamed, "f", R"({"b": 2})");
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].name, "f");
  EXPECT_EQ(named[0].arguments, R"({"b": 2})");  // the text as generated
  EXPECT_EQ(named[0].id.rfind("chatcmpl-tool-", 0), 0u);
  EXPECT_TRUE(forced_tool_calls(ForcedToolChoice::kNamed, "f", " \n").empty());
  const auto required = forced_tool_calls(
      ForcedToolChoice::kRequired, "",
      R"([{"name":"f","parameters":{"b":2,"a":[true,"é"]}},{"name":"g","parameters":{}}])");
  ASSERT_EQ(required.size(), 2u);
  EXPECT_EQ(required[0].arguments, R"({"b": 2, "a": [true, "é"]})");  // Python's json.dumps
  EXPECT_EQ(required[1].name, "g");
  EXPECT_EQ(required[1].arguments, "{}");
  EXPECT_TRUE(
      forced_tool_calls(ForcedToolChoice::kRequired, "", R"([{"name": "f", "param)").empty());
}

TEST(ToolChoiceOutput, Streams) {
  ForcedToolStream named(ForcedToolChoice::kNamed, "f");
  const auto first = named.add("{\"b\"", false);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0]["function"]["name"], "f");
  EXPECT_EQ(first[0]["function"]["arguments"], "{\"b\"");
  EXPECT_TRUE(first[0].contains("id"));
  const auto next = named.add(": 2}", true);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_FALSE(next[0].contains("id"));
  EXPECT_EQ(next[0]["function"]["arguments"], ": 2}");
  EXPECT_TRUE(named.add("", true).empty());

  ForcedToolStream required(ForcedToolChoice::kRequired, "");
  EXPECT_TRUE(required.add(R"([{"name": "g)", false).empty());
  const auto named_now = required.add(R"(", "para)", false);
  ASSERT_EQ(named_now.size(), 1u);
  EXPECT_EQ(named_now[0]["index"], 0);
  EXPECT_EQ(named_now[0]["function"]["name"], "g");
  EXPECT_FALSE(named_now[0]["function"].contains("arguments"));
  const auto calls = required.add(R"(meters": {}}])", true);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["index"], 0);
  EXPECT_EQ(calls[0]["function"]["arguments"], "{}");
  EXPECT_EQ(required.calls_sent(), 1);
}

// What a client accumulates from a "required" stream: calls by index, arguments concatenated.
std::vector<std::pair<std::string, std::string>> accumulate(
    const std::vector<nlohmann::json>& entries) {
  std::vector<std::pair<std::string, std::string>> calls;
  for (const nlohmann::json& e : entries) {
    const auto index = e["index"].get<size_t>();
    if (e.contains("id")) {
      EXPECT_EQ(index, calls.size());
      calls.emplace_back(e["function"]["name"], e["function"].value("arguments", ""));
    } else if (index < calls.size()) {
      calls[index].second += e["function"]["arguments"].get<std::string>();
    } else {
      ADD_FAILURE() << "arguments of a call not started: " << e.dump();
    }
  }
  return calls;
}

// "required" arrays as the grammar lets a model write them (any JSON whitespace), streamed in
// random pieces: each call's name and parameters go out before the array ends, and the pieces
// add up to the whole response's calls.
TEST(ToolChoiceOutput, RequiredCallsStreamPieceByPiece) {
  SEEDED_RNG(rng);
  const std::vector<std::string> params = {"{}", R"({"a": 1})",
                                           R"({ "city" :"Paris\n", "n":[1, 2.50]})",
                                           R"({"nested": {"x": null, "y": "\u00e9"}})"};
  const std::vector<std::string> gaps = {"", " ", "\n", "\n  "};
  const auto gap = [&] { return gaps[rng() % gaps.size()]; };
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 3);
    std::string text = gap() + "[";
    for (int k = 0; k < n; ++k) {
      text +=
          fmt::format("{}{}{{{}\"name\":{}\"f{}\",{}\"parameters\":{}{}{}}}", k > 0 ? "," : "",
                      gap(), gap(), gap(), k, gap(), gap(), params[rng() % params.size()], gap());
    }
    text += gap() + "]";
    SCOPED_TRACE(text);
    const std::vector<ToolCall> want = forced_tool_calls(ForcedToolChoice::kRequired, "", text);
    ASSERT_EQ(want.size(), static_cast<size_t>(n));
    ForcedToolStream stream(ForcedToolChoice::kRequired, "");
    std::vector<nlohmann::json> entries;
    size_t before_end = 0;
    for (size_t at = 0; at < text.size();) {
      const size_t len = std::min(text.size() - at, size_t{1} + rng() % 6);
      const bool last = at + len == text.size();
      for (nlohmann::json& e : stream.add(std::string_view(text).substr(at, len), last)) {
        entries.push_back(std::move(e));
        if (!last) ++before_end;
      }
      at += len;
    }
    const auto got = accumulate(entries);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      EXPECT_EQ(got[k].first, want[k].name);
      EXPECT_EQ(got[k].second, want[k].arguments);
    }
    EXPECT_GE(before_end, static_cast<size_t>(n));  // at least every name before the end
    EXPECT_EQ(stream.calls_sent(), n);
  }
  // Cut short by max_tokens: the whole response has no calls; what streamed stays, no more.
  ForcedToolStream cut(ForcedToolChoice::kRequired, "");
  const auto first = cut.add(R"([{"name": "f", "parameters": {"a": "lo)", false);
  const auto end = cut.add("ng", true);
  const auto got = accumulate([&] {
    std::vector<nlohmann::json> all(first.begin(), first.end());
    for (const nlohmann::json& e : end) all.push_back(e);
    return all;
  }());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].second, R"({"a": "long)");
  EXPECT_TRUE(forced_tool_calls(ForcedToolChoice::kRequired, "",
                                R"([{"name": "f", "parameters": {"a": "long)")
                  .empty());
}

}  // namespace
}  // namespace ctxpar::server
