// /v1/responses: requests render to the chat request vLLM renders them to (input items joined
// into assistant turns, flat tools, tool_choice, text.format, logprobs), bad ones are refused
// with the field named, and ResponsesEventStream turns random chat deltas into items whose
// texts and arguments are exactly what the deltas carried, opened and closed in order.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "ctxpar/server/api_error.h"
#include "ctxpar/server/responses_output.h"
#include "ctxpar/server/responses_request.h"
#include "ctxpar/tokenizer/chat_template/python_text.h"
#include "support/seeded_rng.h"

namespace ctxpar::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

ResponsesRequest parse(const char* body) {
  return parse_responses_request(ordered_json::parse(body));
}

TEST(ResponsesRequest, InstructionsAndTextInputAreSystemAndUserMessages) {
  const ResponsesRequest r = parse(
      R"({"instructions": "be brief", "input": "hi", "max_output_tokens": 9, "temperature": 0.5,
          "stream": true, "metadata": {"k": "v"}})");
  EXPECT_EQ(r.chat["messages"], ordered_json::parse(R"([{"role": "system", "content": "be brief"},
                                                        {"role": "user", "content": "hi"}])"));
  EXPECT_EQ(r.chat["max_tokens"], 9);
  EXPECT_EQ(r.chat["temperature"], 0.5);
  EXPECT_EQ(r.chat["stream"], true);
  EXPECT_EQ(r.chat["add_generation_prompt"], true);
  EXPECT_FALSE(r.chat.contains("tools"));
  EXPECT_EQ(r.echo["instructions"], "be brief");
  EXPECT_EQ(r.echo["metadata"], json({{"k", "v"}}));
  EXPECT_EQ(r.echo["tool_choice"], "auto");
  EXPECT_EQ(r.echo["tools"], json::array());
  EXPECT_EQ(r.echo["truncation"], "disabled");
}

TEST(ResponsesRequest, ItemsJoinAssistantTurnsAsVllm) {
  // Reasoning, text and two calls of one turn become one assistant message; outputs are tool
  // messages; parts become text parts.
  const ResponsesRequest r = parse(R"({"input": [
      {"role": "user", "content": [{"type": "input_text", "text": "a"},
                                   {"type": "input_text", "text": "b"}]},
      {"type": "reasoning", "id": "rs_1", "summary": [], "content": [{"type": "reasoning_text",
                                                                      "text": "think"}]},
      {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
      {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"x\": 1}"},
      {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "c1", "output": "1"},
      {"type": "function_call_output", "call_id": "c2",
       "output": [{"type": "input_text", "text": "2"}]}]})");
  EXPECT_EQ(r.chat["messages"], ordered_json::parse(R"([
      {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
      {"role": "assistant", "reasoning": "think", "content": "ok", "tool_calls": [
          {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}},
          {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
      {"role": "tool", "content": "1", "tool_call_id": "c1"},
      {"role": "tool", "content": [{"type": "text", "text": "2"}], "tool_call_id": "c2"}])"));
}

TEST(ResponsesRequest, AnIncompleteAssistantMessageLastIsContinued) {
  const ResponsesRequest r = parse(R"({"input": [{"role": "user", "content": "q"},
      {"type": "message", "role": "assistant", "status": "incomplete", "content": "The an"}]})");
  EXPECT_EQ(r.chat["continue_final_message"], true);
  EXPECT_EQ(r.chat["add_generation_prompt"], false);
  EXPECT_EQ(r.chat["messages"].back()["content"], "The an");
}

TEST(ResponsesRequest, ToolsToolChoiceFormatAndLogprobs) {
  const ResponsesRequest r = parse(R"({"input": "x",
      "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"},
                 "strict": true}],
      "tool_choice": {"type": "function", "name": "f"}, "parallel_tool_calls": false,
      "text": {"format": {"type": "json_schema", "name": "s", "schema": {"type": "object"}}},
      "include": ["message.output_text.logprobs"], "top_logprobs": 3,
      "reasoning": {"effort": "low"}})");
  EXPECT_EQ(r.chat["tools"], ordered_json::parse(R"([{"type": "function", "function":
      {"name": "f", "parameters": {"type": "object"}, "strict": true}}])"));
  EXPECT_EQ(r.chat["tool_choice"],
            ordered_json::parse(R"({"type": "function", "function": {"name": "f"}})"));
  EXPECT_EQ(r.chat["response_format"], ordered_json::parse(R"({"type": "json_schema",
      "json_schema": {"name": "s", "schema": {"type": "object"}}})"));
  EXPECT_EQ(r.chat["logprobs"], true);
  EXPECT_EQ(r.chat["top_logprobs"], 3);
  EXPECT_EQ(r.chat["reasoning_effort"], "low");  // chat adds enable_thinking
  EXPECT_FALSE(r.parallel_tool_calls);
  EXPECT_TRUE(r.output_logprobs);
  // Without include, no logprobs however many top_logprobs.
  EXPECT_FALSE(parse(R"({"input": "x", "top_logprobs": 3})").chat.contains("logprobs"));
}

TEST(ResponsesRequest, CustomAndNamespaceToolsAsVllmShowsThem) {
  const ResponsesRequest r = parse(R"({"input": [
      {"role": "user", "content": "fix it"},
      {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "a\"\u00e9\n"},
      {"type": "function_call", "call_id": "c2", "namespace": "fs", "name": "read",
       "arguments": "{}"},
      {"type": "custom_tool_call_output", "call_id": "c1", "output": "done"}],
      "tools": [{"type": "custom", "name": "apply_patch", "description": "patch"},
                {"type": "namespace", "name": "fs", "description": "files", "tools": [
                    {"type": "function", "name": "read", "parameters": {"type": "object"}}]},
                {"type": "web_search"}, {"type": "file_search", "vector_store_ids": []}]})");
  // Built-in tools are dropped; the custom one is a one-string function; namespaced ones flat.
  EXPECT_EQ(r.chat["tools"], ordered_json::parse(R"([
      {"type": "function", "function": {"name": "apply_patch", "description": "patch",
       "parameters": {"type": "object", "properties": {"input": {"type": "string",
           "description": "The freeform text payload for this tool."}},
           "required": ["input"], "additionalProperties": false}}},
      {"type": "function", "function": {"name": "fs__read", "parameters": {"type": "object"}}}
  ])"));
  EXPECT_EQ(r.tool_names.custom, std::set<std::string>{"apply_patch"});
  EXPECT_EQ(r.tool_names.namespaced.at("fs__read"),
            std::make_pair(std::string("fs"), std::string("read")));
  const ordered_json& calls = r.chat["messages"][1]["tool_calls"];
  // json.dumps({"input": ...}) as Python writes it (ensure_ascii=False).
  EXPECT_EQ(calls[0]["function"]["arguments"], "{\"input\": \"a\\\"\u00e9\\n\"}");
  EXPECT_EQ(calls[1]["function"]["name"], "fs__read");
  EXPECT_EQ(r.chat["messages"][2],
            ordered_json::parse(R"({"role": "tool", "content": "done", "tool_call_id": "c1"})"));
  EXPECT_EQ(r.echo["tools"].size(), 4u);  // the response repeats the tools as given
}

// Every prefix of a custom call's arguments decodes to a prefix of its input, growing, and the
// whole arguments to the input itself; random inputs cover escapes, controls and 4-byte UTF-8.
TEST(ResponsesOutput, CustomToolInputPrefixesGrowToTheInput) {
  SEEDED_RNG(rng);
  const std::u32string alphabet = U"ab \"\\/\n\t\x01\x1f\u00e9\u4e2d\U0001F600{}:";
  for (int round = 0; round < 300; ++round) {
    std::u32string input32;
    for (size_t n = rng() % 20; n > 0; --n) input32 += alphabet[rng() % alphabet.size()];
    const std::string input = chat_template::encode_utf8(input32);
    // json.dumps spacing, or none; escapes as Python writes them, or \u-escaped further.
    std::string arguments = rng() % 2 ? "{\"input\": " : "{ \"input\" :";
    arguments += rng() % 2 ? json(input).dump() : json(input).dump(-1, ' ', true);
    arguments += "}";
    std::string last;
    for (size_t cut = 0; cut <= arguments.size(); ++cut) {
      const std::string got = custom_tool_input_prefix(arguments.substr(0, cut));
      ASSERT_EQ(got.compare(0, last.size(), last), 0) << arguments << " at " << cut;
      ASSERT_EQ(input.compare(0, got.size(), got), 0) << arguments << " at " << cut;
      last = got;
    }
    EXPECT_EQ(last, input) << arguments;
    EXPECT_EQ(custom_tool_input(arguments), input);
  }
  EXPECT_EQ(custom_tool_input("not json"), "not json");
  EXPECT_EQ(custom_tool_input_prefix(R"({"other": "x", "input": "y)"), "");
}

TEST(ResponsesEventStream, CustomAndNamespacedCalls) {
  SEEDED_RNG(rng);
  ResponsesToolNames names;
  names.custom = {"apply_patch"};
  names.namespaced["fs__read"] = {"fs", "read"};
  const std::string input = "*** Begin Patch\n\"quoted\" \u00e9\n*** End Patch";
  const std::string arguments = "{\"input\": " + json(input).dump() + "}";
  ResponsesEventStream stream(true, &names);
  std::vector<json> events;
  const auto add = [&](const json& delta) {
    for (json& e : stream.add(delta, json::array())) events.push_back(std::move(e));
  };
  add({{"tool_calls",
        json::array({{{"index", 0}, {"id", "c0"}, {"function", {{"name", "apply_patch"}}}}})}});
  for (size_t at = 0; at < arguments.size();) {
    const size_t n = std::min(arguments.size() - at, size_t{1} + rng() % 5);
    add({{"tool_calls",
          json::array({{{"index", 0}, {"function", {{"arguments", arguments.substr(at, n)}}}}})}});
    at += n;
  }
  add({{"tool_calls", json::array({{{"index", 1},
                                    {"id", "c1"},
                                    {"function", {{"name", "fs__read"}, {"arguments", "{}"}}}}})}});
  for (json& e : stream.close("completed")) events.push_back(std::move(e));
  std::string streamed;
  json done_input, done_name;
  for (const json& e : events) {
    if (e["type"] == "response.custom_tool_call_input.delta") streamed += e["delta"];
    if (e["type"] == "response.custom_tool_call_input.done") done_input = e["input"];
    if (e["type"] == "response.function_call_arguments.done") done_name = e["name"];
  }
  EXPECT_EQ(streamed, input);
  EXPECT_EQ(done_input, input);
  EXPECT_EQ(done_name, "read");
  const json& items = stream.items();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0]["type"], "custom_tool_call");
  EXPECT_EQ(items[0]["input"], input);
  EXPECT_EQ(items[0]["call_id"], "c0");
  EXPECT_TRUE(items[0]["id"].get<std::string>().starts_with("ctc_"));
  EXPECT_EQ(items[1]["type"], "function_call");
  EXPECT_EQ(items[1]["name"], "read");
  EXPECT_EQ(items[1]["namespace"], "fs");
  // The whole response makes the same items of the same calls.
  const json whole = responses_output_items(
      {.calls = {{"c0", "apply_patch", arguments}, {"c1", "fs__read", "{}"}}, .parsed = true},
      names);
  ASSERT_EQ(whole.size(), 2u);
  EXPECT_EQ(whole[0]["input"], input);
  EXPECT_EQ(whole[1]["namespace"], "fs");
}

TEST(ResponsesRequest, RefusalsNameTheField) {
  const struct {
    const char* body;
    int status;
    const char* needle;
  } cases[] = {
      {R"({})", 400, "input: Field required"},
      {R"({"input": 5})", 400, "input"},
      {R"({"input": []})", 400, "at least one"},
      {R"({"input": [{"type": "item_reference", "id": "x"}]})", 400, "item_reference"},
      {R"({"input": [{"role": "tool", "content": "x"}]})", 400, "'tool'"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_file"}]}]})", 400, "input_file"},
      {R"({"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]})", 400,
       "input[0].call_id"},
      {R"({"input": [{"type": "reasoning", "encrypted_content": "zz"}]})", 400, "Encrypted"},
      {R"({"input": "x", "previous_response_id": "resp_9"})", 404, "'resp_9' not found"},
      {R"({"input": "x", "background": true})", 400, "background"},
      {R"({"input": "x", "tools": [{"type": "namespace", "name": "n"}]})", 400, "tools[0].tools"},
      {R"({"input": "x", "tools": [{"type": "custom"}]})", 400, "tools[0].name"},
      {R"({"input": "x", "tool_choice": "required"})", 400, "`tools` must be set"},
      {R"({"input": "x", "tools": [{"type": "function", "name": "f"}], "tool_choice": "any"})", 400,
       "'any'"},
      {R"({"input": "x", "text": {"format": {"type": "json_schema"}}})", 400, "schema"},
      {R"({"input": "x", "include": ["x.y"]})", 400, "'x.y'"},
      {R"({"input": "x", "truncation": "middle"})", 400, "truncation"},
      {R"({"input": "x", "stream": "yes"})", 400, "stream"},
      {R"({"input": "x", "prompt": {"id": "p"}})", 400, "prompt"},
      {R"({"input": [{"type": 5, "text": "x"}]})", 400, "needs a type or a role"},
      {R"({"input": [{"role": "user", "content": [{"type": ["input_text"], "text": "x"}]}]})", 400,
       "content part type ''"},
      {R"({"input": "x", "tools": [{"name": "f"}]})", 400, "tools[0].type"},
      {R"({"input": "x", "text": {"format": {"type": "json_schema", "name": 5,
          "schema": {}}}})",
       400, "text.format.name"},
  };
  for (const auto& c : cases) {
    try {
      parse(c.body);
      ADD_FAILURE() << c.body << " was accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), c.status) << c.body;
      EXPECT_NE(std::string(e.what()).find(c.needle), std::string::npos)
          << c.body << ": " << e.what();
    }
  }
}

// Random chat deltas: runs of reasoning, then content and calls in random order, each cut in
// random pieces; the stream's items must carry exactly those texts, in that order.
TEST(ResponsesEventStream, ItemsCarryExactlyTheDeltas) {
  SEEDED_RNG(rng);
  const auto text = [&](size_t n) {
    std::string s;
    for (size_t i = 0; i < n; ++i) s += static_cast<char>('a' + rng() % 26);
    return s;
  };
  for (int round = 0; round < 200; ++round) {
    const bool parallel = rng() % 4 != 0;
    ResponsesEventStream stream(parallel);
    std::vector<json> events;
    // What each item should end up with: {type, text or arguments, name}.
    std::vector<std::tuple<std::string, std::string, std::string>> expected;
    const auto add = [&](const json& delta) {
      for (json& e : stream.add(delta, json::array())) events.push_back(std::move(e));
    };
    int call_index = 0;
    const int runs = static_cast<int>(rng() % 6);
    for (int k = 0; k < runs; ++k) {
      const int kind = static_cast<int>(rng() % 3);
      const std::string whole = text(rng() % 12);
      if (kind < 2) {
        const char* key = kind == 0 ? "reasoning" : "content";
        const char* type = kind == 0 ? "reasoning" : "message";
        if (whole.empty() && kind == 1) continue;  // empty content opens nothing
        if (expected.empty() || std::get<0>(expected.back()) != type)
          expected.emplace_back(type, "", "");
        std::get<1>(expected.back()) += whole;
        if (whole.empty()) add({{key, ""}});
        for (size_t at = 0; at < whole.size();) {
          const size_t n = std::min(whole.size() - at, size_t{1} + rng() % 4);
          add({{key, whole.substr(at, n)}});
          at += n;
        }
        continue;
      }
      const std::string name = "f" + std::to_string(call_index);
      const bool kept = parallel || call_index == 0;
      if (kept) expected.emplace_back("function_call", whole, name);
      const size_t first = whole.empty() ? 0 : rng() % (whole.size() + 1);
      add({{"tool_calls",
            json::array(
                {{{"index", call_index},
                  {"id", "call" + std::to_string(call_index)},
                  {"type", "function"},
                  {"function", {{"name", name}, {"arguments", whole.substr(0, first)}}}}})}});
      for (size_t at = first; at < whole.size();) {
        const size_t n = std::min(whole.size() - at, size_t{1} + rng() % 4);
        add({{"tool_calls", json::array({{{"index", call_index},
                                          {"function", {{"arguments", whole.substr(at, n)}}}}})}});
        at += n;
      }
      ++call_index;
    }
    const bool cut = rng() % 2 == 0;
    for (json& e : stream.close(cut ? "incomplete" : "completed")) events.push_back(std::move(e));

    const json& items = stream.items();
    ASSERT_EQ(items.size(), expected.size());
    for (size_t i = 0; i < items.size(); ++i) {
      const auto& [type, body, name] = expected[i];
      const json& item = items[i];
      EXPECT_EQ(item["type"], type);
      EXPECT_EQ(item["status"], i + 1 == items.size() && cut ? "incomplete" : "completed");
      if (type == "function_call") {
        EXPECT_EQ(item["arguments"], body);
        EXPECT_EQ(item["name"], name);
        EXPECT_EQ(item["call_id"], "call" + name.substr(1));
      } else if (type == "reasoning") {
        EXPECT_EQ(item["content"][0]["text"], body);
      } else {
        EXPECT_EQ(item["content"][0]["text"], body);
      }
    }
    // Events: each item added, then its deltas, then done, with output_index counting items.
    int open = -1, done = 0;
    for (const json& e : events) {
      const std::string type = e["type"];
      if (type == "response.output_item.added") {
        EXPECT_EQ(open, -1);
        open = e["output_index"];
        EXPECT_EQ(open, done);
      } else if (type == "response.output_item.done") {
        EXPECT_EQ(e["output_index"], open);
        EXPECT_EQ(e["item"], items[static_cast<size_t>(done)]);
        open = -1;
        ++done;
      } else {
        EXPECT_EQ(e["output_index"], open) << type;
        EXPECT_EQ(e["item_id"], items[static_cast<size_t>(open)]["id"]) << type;
      }
    }
    EXPECT_EQ(open, -1);
    EXPECT_EQ(done, static_cast<int>(items.size()));
  }
}

TEST(ResponsesOutput, WholeItemsAsVllmBuildsThem) {
  ResponsesMessage m{
      .reasoning = "r", .content = "c", .calls = {{"id1", "f", "{}"}, {"id2", "g", "[]"}}};
  m.parsed = true;
  m.finish_reason = "length";
  const json items = responses_output_items(m, {});
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[0]["type"], "reasoning");
  EXPECT_EQ(items[0]["status"], nullptr);
  EXPECT_EQ(items[1]["status"], "completed");  // calls follow: only the last is cut
  EXPECT_EQ(items[2]["status"], "completed");
  EXPECT_EQ(items[3]["status"], "incomplete");
  EXPECT_EQ(items[3]["call_id"], "id2");
  // Without a parser: one message, empty when there is no text.
  const json plain = responses_output_items({.content = "", .finish_reason = "stop"}, {});
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(plain[0]["content"], json::array());
  EXPECT_EQ(plain[0]["status"], "completed");
}

}  // namespace
}  // namespace ctxpar::server
