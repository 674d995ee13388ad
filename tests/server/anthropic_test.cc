// /v1/messages: request bodies render to the chat request vLLM's AnthropicServingMessages
// converts them to (system text, tool_use / tool_result / thinking blocks, tools with their
// additions and removals, tool_choice, output_config, thinking), bad ones are refused with the
// field named, stop reasons map as vLLM's, and AnthropicEventStream turns random chat deltas
// into blocks whose texts and inputs are exactly what the deltas carried, opened and closed in
// order.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "ctxpar/server/anthropic_output.h"
#include "ctxpar/server/anthropic_request.h"
#include "ctxpar/server/api_error.h"
#include "support/seeded_rng.h"

namespace ctxpar::server {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

ordered_json convert(const char* body, bool merge = false, bool count_tokens = false) {
  return anthropic_chat_request(ordered_json::parse(body), count_tokens,
                                AnthropicRendering{merge, "low"});
}

TEST(AnthropicRequest, SystemBlocksJoinWithoutTheBillingHeader) {
  const char* body = R"({"model": "m", "max_tokens": 5,
      "system": [{"type": "text", "text": "x-anthropic-billing-header: cch=1"},
                 {"type": "text", "text": "You are"}, {"type": "text", "text": " terse."}],
      "messages": [{"role": "user", "content": "a"},
                   {"role": "system", "content": "late"},
                   {"role": "system", "content": [{"type": "text", "text": "x-anthropic-billing-header"}]},
                   {"role": "user", "content": "b"}]})";
  EXPECT_EQ(convert(body, false)["messages"], ordered_json::parse(R"([
      {"role": "system", "content": "You are terse."}, {"role": "user", "content": "a"},
      {"role": "system", "content": "late"}, {"role": "user", "content": "b"}])"));
  EXPECT_EQ(convert(body, true)["messages"], ordered_json::parse(R"([
      {"role": "system", "content": "You are terse.late"}, {"role": "user", "content": "a"},
      {"role": "user", "content": "b"}])"));
  const ordered_json chat = convert(body);
  EXPECT_EQ(chat["model"], "m");
  EXPECT_EQ(chat["max_tokens"], 5);
  EXPECT_EQ(chat["max_completion_tokens"], 5);
  EXPECT_FALSE(chat.contains("stream"));
  EXPECT_FALSE(chat.contains("tools"));
  EXPECT_FALSE(chat.contains("tool_choice"));
}

TEST(AnthropicRequest, BlocksBecomeChatMessagesAsVllmConvertsThem) {
  const ordered_json chat = convert(R"({"model": "m", "max_tokens": 5, "messages": [
      {"role": "user", "content": [{"type": "text", "text": "q"}, {"type": "text", "text": ""}]},
      {"role": "assistant", "content": [
          {"type": "thinking", "thinking": "hm", "signature": "s"},
          {"type": "redacted_thinking", "data": "x"},
          {"type": "text", "text": "one"}, {"type": "text", "text": "two"},
          {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"city": "Zürich 🌞", "n": [1, 2.5]}},
          {"type": "tool_use", "name": "g"}]},
      {"role": "user", "content": [
          {"type": "text", "text": "after"},
          {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
              {"type": "text", "text": "r1"}, {"type": "text", "text": "r2"}, "skipped"]},
          {"type": "tool_reference", "tool_name": "f"}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "only"},
                                   {"type": "tool_result"}]},
      {"role": "assistant", "content": [{"type": "thinking", "thinking": ""}]},
      {"role": "assistant", "content": []}]})");
  const ordered_json& m = chat["messages"];
  ASSERT_EQ(m.size(), 8u) << m.dump();
  EXPECT_EQ(m[0], ordered_json::parse(R"({"role": "user", "content": "q"})"));
  EXPECT_EQ(m[1]["reasoning"], "hm");
  EXPECT_EQ(m[1]["content"], ordered_json::parse(R"([{"type": "text", "text": "one"},
                                                     {"type": "text", "text": "two"}])"));
  ASSERT_EQ(m[1]["tool_calls"].size(), 2u);
  EXPECT_EQ(m[1]["tool_calls"][0],
            ordered_json::parse(R"({"id": "toolu_1", "type": "function", "function": {"name": "f",
                "arguments": "{\"city\": \"Z\\u00fcrich \\ud83c\\udf1e\", \"n\": [1, 2.5]}"}})"));
  // No id: vLLM's "call_<unix time>"; no input: "{}".
  EXPECT_TRUE(m[1]["tool_calls"][1]["id"].get<std::string>().starts_with("call_"));
  EXPECT_EQ(m[1]["tool_calls"][1]["function"]["arguments"], "{}");
  // Tool results go out as tool messages before the rest of their turn.
  EXPECT_EQ(m[2], ordered_json::parse(
                      R"({"role": "tool", "tool_call_id": "toolu_1", "content": "r1\nr2"})"));
  EXPECT_EQ(m[3], ordered_json::parse(R"({"role": "user", "content": "after"})"));
  EXPECT_EQ(m[4],
            ordered_json::parse(R"({"role": "tool", "tool_call_id": "x", "content": "only"})"));
  EXPECT_EQ(m[5], ordered_json::parse(R"({"role": "tool", "tool_call_id": "", "content": ""})"));
  // The results-only user turn left no user message; an empty thinking is still reasoning.
  EXPECT_EQ(m[6], ordered_json::parse(R"({"role": "assistant", "reasoning": ""})"));
  EXPECT_EQ(m[7], ordered_json::parse(R"({"role": "assistant"})"));
}

TEST(AnthropicRequest, ToolsToolChoiceAndTheirChanges) {
  const ordered_json chat = convert(R"({"model": "m", "max_tokens": 5,
      "tools": [{"name": "a", "input_schema": {"properties": {}}},
                {"type": "custom", "name": "b", "description": "bee", "strict": true,
                 "input_schema": {"type": "object"}},
                {"name": "c", "input_schema": {"type": "object"}, "defer_loading": true}],
      "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
      "messages": [
          {"role": "system", "content": [
              {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "a"}},
              {"type": "tool_addition", "tool": {"type": "tool_definition",
                  "definition": {"name": "d", "input_schema": {"type": "object"}}}},
              {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "c"}}]},
          {"role": "user", "content": "x"}]})");
  EXPECT_EQ(chat["tool_choice"], "required");
  EXPECT_EQ(chat["parallel_tool_calls"], false);
  EXPECT_EQ(chat["tools"], ordered_json::parse(R"([
      {"type": "function", "function": {"name": "b", "description": "bee",
          "parameters": {"type": "object"}, "strict": true}},
      {"type": "function", "function": {"name": "c", "parameters": {"type": "object"}}},
      {"type": "function", "function": {"name": "d", "parameters": {"type": "object"}}}])"));
  // The removal's system message has no text: nothing of it reaches the messages.
  EXPECT_EQ(chat["messages"], ordered_json::parse(R"([{"role": "user", "content": "x"}])"));

  const ordered_json plain = convert(R"({"model": "m", "max_tokens": 5, "messages": [],
      "tools": [{"name": "a", "input_schema": {"properties": {"x": {"type": "string"}}}}]})");
  EXPECT_EQ(plain["tool_choice"], "auto");
  EXPECT_FALSE(plain.contains("parallel_tool_calls"));
  EXPECT_EQ(plain["tools"][0]["function"]["parameters"],
            ordered_json::parse(R"({"properties": {"x": {"type": "string"}}, "type": "object"})"));
  const ordered_json named = convert(R"({"model": "m", "max_tokens": 5, "messages": [],
      "tools": [], "tool_choice": {"type": "tool", "name": "a"}})");
  EXPECT_EQ(named["tool_choice"],
            ordered_json::parse(R"({"type": "function", "function": {"name": "a"}})"));
  EXPECT_EQ(named["parallel_tool_calls"], true);
  EXPECT_EQ(named["tools"], ordered_json::array());
  EXPECT_EQ(convert(R"({"model": "m", "max_tokens": 5, "messages": [],
                        "tool_choice": {"type": "none"}})")["tool_choice"],
            "none");
}

TEST(AnthropicRequest, SamplingStreamOutputConfigAndThinking) {
  const ordered_json chat = convert(R"({"model": "m", "max_tokens": 2048, "messages": [],
      "stop_sequences": ["END"], "temperature": 0.5, "top_p": 0.9, "top_k": 7, "stream": true,
      "metadata": {"user_id": "u"}, "chat_template_kwargs": {"k": 1},
      "output_config": {"effort": "high", "format": {"type": "json_schema",
                                                     "schema": {"type": "object"}}},
      "thinking": {"type": "enabled", "budget_tokens": 1024},
      "ignore_eos": true, "skip_special_tokens": false})");
  EXPECT_EQ(chat["stop"], ordered_json::parse(R"(["END"])"));
  EXPECT_EQ(chat["temperature"], 0.5);
  EXPECT_EQ(chat["top_k"], 7);
  EXPECT_EQ(chat["stream"], true);
  EXPECT_EQ(chat["stream_options"],
            ordered_json::parse(R"({"include_usage": true, "continuous_usage_stats": true})"));
  EXPECT_EQ(chat["chat_template_kwargs"], ordered_json::parse(R"({"k": 1})"));
  EXPECT_EQ(chat["reasoning_effort"], "high");
  EXPECT_EQ(chat["thinking_token_budget"], 1024);
  EXPECT_EQ(chat["response_format"], ordered_json::parse(R"({"type": "json_schema",
      "json_schema": {"name": "json_schema", "schema": {"type": "object"}}})"));
  // vLLM's Anthropic request has no chat extras: they are not passed on.
  EXPECT_FALSE(chat.contains("ignore_eos"));
  EXPECT_FALSE(chat.contains("skip_special_tokens"));
  EXPECT_FALSE(chat.contains("metadata"));
  for (const char* type : {"disabled", "between_tools"}) {
    const std::string body = fmt::format(R"({{"model": "m", "max_tokens": 9, "messages": [],
        "output_config": {{"effort": "max"}}, "thinking": {{"type": "{}"}}}})",
                                         type);
    EXPECT_EQ(convert(body.c_str())["reasoning_effort"], "low") << type;
  }
  EXPECT_FALSE(convert(R"({"model": "m", "max_tokens": 9, "messages": [],
                           "thinking": {"type": "adaptive"}})")
                   .contains("reasoning_effort"));
  // count_tokens bodies have no max_tokens and no sampling.
  const ordered_json count =
      convert(R"({"model": "m", "messages": [{"role": "user", "content": "x"}],
      "thinking": {"type": "enabled", "budget_tokens": 5000}, "stream": true})",
              false, true);
  EXPECT_FALSE(count.contains("max_tokens"));
  EXPECT_FALSE(count.contains("stream"));
  EXPECT_EQ(count["messages"].size(), 1u);
}

TEST(AnthropicRequest, BadRequestsAreRefusedNamingTheField) {
  const struct {
    const char* body;
    const char* needle;
  } cases[] = {
      {R"([1])", "JSON object"},
      {R"({"max_tokens": 1, "messages": []})", "model: Field required"},
      {R"({"model": "", "max_tokens": 1, "messages": []})", "Model is required"},
      {R"({"model": "m", "max_tokens": 1})", "messages: Field required"},
      {R"({"model": "m", "max_tokens": 1, "messages": {}})", "messages: Input should be"},
      {R"({"model": "m", "messages": []})", "max_tokens: Field required"},
      {R"({"model": "m", "max_tokens": 0, "messages": []})", "max_tokens must be positive"},
      {R"({"model": "m", "max_tokens": 1.5, "messages": []})", "max_tokens: Input should be"},
      {R"({"model": "m", "max_tokens": 1, "messages": [{"role": "tool", "content": "x"}]})",
       "messages[0].role: 'tool'"},
      {R"({"model": "m", "max_tokens": 1, "messages": [{"role": "user"}]})",
       "messages[0].content: Field required"},
      {R"({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": 3}]})",
       "messages[0].content: Input should be"},
      {R"({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [{"type": "video"}]}]})",
       "messages[0].content[0].type: 'video'"},
      {R"({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [
          {"type": "image", "source": {"type": "url", "url": "http://x"}}]}]})",
       "messages[0].content[0]: image blocks are not supported"},
      {R"({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [
          {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "image"}]}]}]})",
       "image items in a tool_result"},
      {R"({"model": "m", "max_tokens": 1, "messages": [{"role": "assistant", "content": [
          {"type": "tool_result", "tool_use_id": "t", "content": "r"}]}]})",
       "tool_result blocks belong in user messages"},
      {R"({"model": "m", "max_tokens": 1, "messages": [{"role": "assistant", "content": [
          {"type": "tool_use", "id": "t", "name": "f", "input": [1]}]}]})",
       "messages[0].content[0].input: Input should be a valid dictionary"},
      {R"({"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": [
          {"type": "tool_addition", "tool": {"type": "tool_reference", "name": "a"}}]}]})",
       "only allowed in messages with role \"system\""},
      {R"({"model": "m", "max_tokens": 1, "messages": [{"role": "system", "content": [
          {"type": "tool_removal", "tool": {"type": "tool_reference", "name": "zz"}}]}]})",
       "references tool 'zz', which is not declared in tools"},
      {R"({"model": "m", "max_tokens": 1, "messages": [{"role": "system", "content": [
          {"type": "tool_removal"}]}]})",
       "tool is required for tool_removal blocks"},
      {R"({"model": "m", "max_tokens": 1, "messages": [], "system": 5})",
       "system: Input should be"},
      {R"({"model": "m", "max_tokens": 1, "messages": [], "tools": [{"type": "bash_20250124",
          "name": "bash"}]})",
       "tool type 'bash_20250124' is not supported"},
      {R"({"model": "m", "max_tokens": 1, "messages": [], "tools": [{"name": "a"}]})",
       "tools[0].input_schema: input_schema must be a dictionary"},
      {R"({"model": "m", "max_tokens": 1, "messages": [], "tools": [{"input_schema": {}}]})",
       "tools[0].name: Input should be a valid string"},
      {R"({"model": "m", "max_tokens": 1, "messages": [], "tool_choice": {"type": "tool"}})",
       "tool_choice.name is required when type is 'tool'"},
      {R"({"model": "m", "max_tokens": 1, "messages": [], "tool_choice": {"type": "some"}})",
       "tool_choice.type: 'some'"},
      {R"({"model": "m", "max_tokens": 1, "messages": [], "stop_sequences": "x"})",
       "stop_sequences: Input should be"},
      {R"({"model": "m", "max_tokens": 1, "messages": [], "stream": "yes"})",
       "stream: Input should be"},
      {R"({"model": "m", "max_tokens": 2000, "messages": [],
          "thinking": {"type": "enabled", "budget_tokens": 2000}})",
       "thinking.budget_tokens must be less than max_tokens"},
      {R"({"model": "m", "max_tokens": 5000, "messages": [],
          "thinking": {"type": "enabled", "budget_tokens": 1000}})",
       "greater than or equal to 1024"},
      {R"({"model": "m", "max_tokens": 1, "messages": [], "thinking": {"type": "on"}})",
       "thinking.type: 'on'"},
      {R"({"model": "m", "max_tokens": 1, "messages": [], "output_config": {"effort": "none"}})",
       "output_config.effort"},
      {R"({"model": "m", "max_tokens": 1, "messages": [],
          "output_config": {"format": {"type": "json_object"}}})",
       "output_config.format.type"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.body);
    try {
      convert(c.body);
      ADD_FAILURE() << "accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_NE(std::string(e.what()).find(c.needle), std::string::npos) << e.what();
    }
  }
}

TEST(AnthropicOutput, StopReasonsAsVllmMapsThem) {
  EXPECT_EQ(anthropic_stop("length", "x", true, true).first, "max_tokens");
  EXPECT_EQ(anthropic_stop("abort", nullptr, false, false).first, nullptr);
  EXPECT_EQ(anthropic_stop("stop", nullptr, false, false).first, "end_turn");
  EXPECT_EQ(anthropic_stop("stop", 2, false, false).first, "end_turn");  // a stop token id
  const auto [reason, sequence] = anthropic_stop("stop", "END", false, false);
  EXPECT_EQ(reason, "stop_sequence");
  EXPECT_EQ(sequence, "END");
  // A stop string that cut a call short is the stop; one after whole calls is not.
  EXPECT_EQ(anthropic_stop("tool_calls", "END", true, false).first, "stop_sequence");
  EXPECT_EQ(anthropic_stop("tool_calls", "END", true, true).first, "tool_use");
  EXPECT_EQ(anthropic_stop("tool_calls", nullptr, true, false).first, "tool_use");
  EXPECT_EQ(anthropic_stop("stop", nullptr, true, false).first, "tool_use");  // a named call
  EXPECT_EQ(anthropic_error_type(503), "overloaded_error");
  EXPECT_EQ(anthropic_error_type(502), "api_error");
  EXPECT_EQ(anthropic_error_type(422), "invalid_request_error");
}

TEST(AnthropicOutput, WholeMessage) {
  AnthropicMessage m{.reasoning = "hm",
                     .content = "hi",
                     .calls = {{"c1", "f", R"({"a": [1, "é"]})"}, {"c2", "g", "{}"}},
                     .finish_reason = "tool_calls",
                     .stop_reason = nullptr};
  const ordered_json out =
      anthropic_message("id1", "m", m, anthropic_usage(10, AnthropicCache{4, 2}, 3));
  EXPECT_EQ(out["stop_reason"], "tool_use");
  EXPECT_FALSE(out.contains("stop_sequence"));
  EXPECT_EQ(out["usage"], ordered_json::parse(
                              R"({"input_tokens": 4, "output_tokens": 3,
                                  "cache_creation_input_tokens": 2, "cache_read_input_tokens": 4})"));
  const ordered_json& c = out["content"];
  ASSERT_EQ(c.size(), 4u);
  EXPECT_EQ(c[0]["type"], "thinking");
  EXPECT_EQ(c[0]["thinking"], "hm");
  EXPECT_EQ(c[0]["signature"].get<std::string>().size(), 32u);
  EXPECT_EQ(c[1], ordered_json::parse(R"({"type": "text", "text": "hi"})"));
  EXPECT_EQ(c[2],
            ordered_json::parse(
                R"({"type": "tool_use", "id": "c1", "name": "f", "input": {"a": [1, "é"]}})"));
  EXPECT_EQ(c[3]["input"], ordered_json::object());

  const ordered_json empty = anthropic_message(
      "id2", "m", AnthropicMessage{.content = "", .finish_reason = "stop", .stop_reason = "S"},
      anthropic_usage(5, std::nullopt, 1));
  EXPECT_EQ(empty["content"], ordered_json::parse(R"([{"type": "text", "text": ""}])"));
  EXPECT_EQ(empty["stop_reason"], "stop_sequence");
  EXPECT_EQ(empty["stop_sequence"], "S");
  EXPECT_EQ(empty["usage"], ordered_json::parse(R"({"input_tokens": 5, "output_tokens": 1})"));
  EXPECT_THROW(
      anthropic_message(
          "id3", "m", AnthropicMessage{.calls = {{"c", "f", "[1]"}}, .finish_reason = "tool_calls"},
          anthropic_usage(1, std::nullopt, 1)),
      ApiError);
}

// The events of an SSE text, parsed; each "event:" line names its data's type.
std::vector<json> parse_events(const std::string& sse) {
  std::vector<json> events;
  for (size_t at = sse.find("event: "); at != std::string::npos; at = sse.find("event: ", at + 1)) {
    const size_t data = sse.find("\ndata: ", at);
    const json event = json::parse(sse.substr(data + 7, sse.find("\n\n", data) - data - 7));
    EXPECT_EQ(sse.substr(at + 7, data - at - 7), event["type"]);
    events.push_back(event);
  }
  return events;
}

// Random streams: reasoning first, then content and calls interleaved (each call's arguments in
// pieces, content between them). The blocks must open and close in order, thinking blocks end
// with their signature, all text and reasoning come out once and in order, and each call's
// input_json_delta pieces join to its arguments.
TEST(AnthropicEventStream, RandomDeltasBecomeWellFormedBlocks) {
  SEEDED_RNG(rng);
  const auto text = [&](size_t max) {
    static const char* const kPieces[] = {"a", "b", " ", "é", "\n", "{", "\"", "🌞"};
    std::string s;
    for (size_t n = rng() % max + 1; n > 0; --n) s += kPieces[rng() % 8];
    return s;
  };
  for (int round = 0; round < 300; ++round) {
    AnthropicEventStream stream;
    std::string sse = stream.start("id", "m", anthropic_usage(7, std::nullopt, 0));
    std::string reasoning, content;
    std::vector<std::pair<std::string, std::string>> calls;  // name, arguments
    for (int n = static_cast<int>(rng() % 4); n > 0; --n) {
      const std::string r = text(6);
      reasoning += r;
      sse += stream.add({{"reasoning", r}});
    }
    const size_t num_calls = rng() % 4;
    for (int step = 0; step < 8; ++step) {
      if (rng() % 2 == 0 || calls.size() == num_calls) {
        const std::string c = text(5);
        content += c;
        sse += stream.add({{"content", c}});
        continue;
      }
      const int index = static_cast<int>(calls.size());
      const std::string name = "f" + std::to_string(index);
      const std::string args = rng() % 4 == 0 ? "{\"x\": 1" : R"({"x": "\u00e9\n", "y": [1, 2]})";
      calls.emplace_back(name, args);
      size_t at = rng() % 3 == 0 ? 0 : std::min<size_t>(args.size(), rng() % 6);
      json first = {{"index", index},
                    {"id", "call" + std::to_string(index)},
                    {"type", "function"},
                    {"function", {{"name", name}}}};
      if (at > 0) first["function"]["arguments"] = args.substr(0, at);
      sse += stream.add({{"tool_calls", {first}}});
      while (at < args.size()) {
        const size_t n = std::min<size_t>(args.size() - at, 1 + rng() % 5);
        sse +=
            stream.add({{"tool_calls",
                         {{{"index", index}, {"function", {{"arguments", args.substr(at, n)}}}}}}});
        at += n;
        if (rng() % 3 == 0) {  // content while the call's block is open waits for its end
          const std::string c = text(3);
          content += c;
          sse += stream.add({{"content", c}});
        }
      }
    }
    // (Arguments are cut between bytes above: ASCII, as json.dumps writes them by default.)
    // A stop string is the stop reason unless the last call is whole JSON.
    const json stop = rng() % 2 == 0 ? json("END") : json(nullptr);
    const bool last_whole = !calls.empty() && calls.back().second.back() == '}';
    std::string want_stop = calls.empty() ? "end_turn" : "tool_use";
    if (stop.is_string() && !last_whole) want_stop = "stop_sequence";
    sse += stream.finish(calls.empty() ? "stop" : "tool_calls", stop,
                         anthropic_usage(7, std::nullopt, 9));
    const std::vector<json> events = parse_events(sse);
    ASSERT_GE(events.size(), 3u);
    EXPECT_EQ(events.front()["type"], "message_start");
    EXPECT_EQ(events.front()["message"]["usage"]["input_tokens"], 7);
    EXPECT_EQ(events[events.size() - 1]["type"], "message_stop");
    const json& delta = events[events.size() - 2];
    EXPECT_EQ(delta["type"], "message_delta");
    EXPECT_EQ(delta["usage"]["output_tokens"], 9);
    EXPECT_EQ(delta["delta"]["stop_reason"], want_stop);
    EXPECT_EQ(delta["delta"]["stop_sequence"], want_stop == "stop_sequence" ? stop : json());
    std::string got_reasoning, got_content;
    std::vector<std::pair<std::string, std::string>> got_calls;
    int index = -1;
    std::string kind;
    bool open = false, signed_block = false;
    for (size_t i = 1; i + 2 < events.size(); ++i) {
      const json& e = events[i];
      if (e["type"] == "content_block_start") {
        ASSERT_FALSE(open);
        EXPECT_EQ(e["index"], index + 1);
        index = e["index"].get<int>();
        open = true;
        signed_block = false;
        kind = e["content_block"]["type"].get<std::string>();
        if (kind == "tool_use") {
          got_calls.emplace_back(e["content_block"]["name"].get<std::string>(), "");
          EXPECT_EQ(e["content_block"]["input"], json::object());
        }
      } else if (e["type"] == "content_block_delta") {
        ASSERT_TRUE(open);
        EXPECT_EQ(e["index"], index);
        const std::string type = e["delta"]["type"].get<std::string>();
        EXPECT_FALSE(signed_block);
        if (type == "thinking_delta") {
          EXPECT_EQ(kind, "thinking");
          got_reasoning += e["delta"]["thinking"].get<std::string>();
        } else if (type == "signature_delta") {
          EXPECT_EQ(kind, "thinking");
          signed_block = true;
        } else if (type == "text_delta") {
          EXPECT_EQ(kind, "text");
          got_content += e["delta"]["text"].get<std::string>();
        } else {
          EXPECT_EQ(type, "input_json_delta");
          EXPECT_EQ(kind, "tool_use");
          got_calls.back().second += e["delta"]["partial_json"].get<std::string>();
        }
      } else {
        EXPECT_EQ(e["type"], "content_block_stop");
        EXPECT_EQ(e["index"], index);
        EXPECT_EQ(signed_block, kind == "thinking");
        open = false;
      }
    }
    EXPECT_FALSE(open);
    EXPECT_EQ(got_reasoning, reasoning);
    EXPECT_EQ(got_content, content);
    EXPECT_EQ(got_calls, calls);
  }
}

TEST(AnthropicEventStream, AFailureClosesTheOpenBlockWithAnError) {
  AnthropicEventStream stream;
  std::string sse = stream.start("id", "m", anthropic_usage(1, std::nullopt, 0));
  sse += stream.add({{"reasoning", "hm"}});
  sse += stream.fail("engine died");
  const std::vector<json> events = parse_events(sse);
  ASSERT_EQ(events.size(), 6u);
  EXPECT_EQ(events[3]["delta"]["type"], "signature_delta");
  EXPECT_EQ(events[4]["type"], "content_block_stop");
  EXPECT_EQ(events[5], json::parse(R"({"type": "error", "error": {"type": "api_error",
                                       "message": "engine died"}})"));
}

}  // namespace
}  // namespace ctxpar::server
