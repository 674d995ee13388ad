// GenerationResponder with both chat parsers on (deepseek_r1 + hermes, and the GLM recipe's
// glm45 + glm47): an output with thinking, text and two tool calls, fed in random pieces, gives
// vLLM's message (reasoning, the text before the calls as content, tool_calls, finish_reason
// "tool_calls") whole, and streamed chunks whose reasoning, content and tool calls add up to the
// same.
#include "ctxpar/server/generation_responder.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "ctxpar/server/responses_request.h"
#include "ctxpar/tokenizer/byte_tokenizer.h"
#include "support/seeded_rng.h"

namespace ctxpar::server {
namespace {

using nlohmann::json;

constexpr std::string_view kOutput =
    "check the weather</think>On it.<tool_call>\n{\"name\": \"weather\", \"arguments\": "
    "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"time\", \"arguments\": "
    "{}}\n</tool_call>";

// The output in random pieces of 1 to 7 bytes (one token id each), the last one finishing.
std::vector<ChoiceDelta> pieces(std::mt19937_64& rng, std::string_view output = kOutput) {
  std::vector<ChoiceDelta> out;
  for (size_t at = 0; at < output.size();) {
    const size_t n = std::min(output.size() - at, size_t{1} + rng() % 7);
    ChoiceDelta d;
    d.text = std::string(output.substr(at, n));
    d.token_ids = {static_cast<int32_t>(at)};
    at += n;
    if (at == output.size()) d.finish_reason = "stop";
    out.push_back(std::move(d));
  }
  return out;
}

// What a stream of SSE events adds up to for choice 0.
struct Streamed {
  std::string reasoning, content;
  std::vector<json> calls;
  json finish;
};
Streamed add_up(const std::string& events) {
  Streamed s;
  for (size_t at = events.find("data: "); at != std::string::npos;
       at = events.find("data: ", at + 1)) {
    if (events.compare(at, 12, "data: [DONE]") == 0) continue;
    const json chunk = json::parse(events.substr(at + 6, events.find("\n\n", at) - at - 6));
    if (chunk["choices"].empty()) continue;
    const json& c = chunk["choices"][0];
    s.reasoning += c["delta"].value("reasoning", "");
    if (c["delta"].contains("content") && !c["delta"]["content"].is_null()) {
      s.content += c["delta"]["content"].get<std::string>();
    }
    // Calls accumulate as a client accumulates them: an entry with an id starts one (its
    // arguments may follow in later entries of the same index).
    for (const json& call : c["delta"].value("tool_calls", json::array())) {
      if (call.contains("id")) {
        EXPECT_EQ(call["index"], s.calls.size());
        json whole = call;
        if (!whole["function"].contains("arguments")) whole["function"]["arguments"] = "";
        s.calls.push_back(std::move(whole));
      } else {
        const size_t index = call["index"].get<size_t>();
        EXPECT_LT(index, s.calls.size());
        if (index >= s.calls.size()) continue;
        json& args = s.calls[index]["function"]["arguments"];
        args = args.get<std::string>() + call["function"]["arguments"].get<std::string>();
      }
    }
    if (!c["finish_reason"].is_null()) s.finish = c["finish_reason"];
  }
  return s;
}

// The plan's one choice answered whole, and what its SSE stream adds up to, each from the same
// output cut in random pieces.
struct BothWays {
  json choice;
  Streamed streamed;
};
BothWays respond_both_ways(const GenerationPlan& plan, const tokenizer::ByteTokenizer& tok,
                           std::string_view output, std::mt19937_64& rng) {
  const SamplingRequest request;
  GenerationResponder whole(plan, request, tok);
  whole.add(pieces(rng, output), false);
  GenerationResponder stream(plan, request, tok);
  std::string events = stream.first_events();
  for (const ChoiceDelta& d : pieces(rng, output)) events += stream.add({d}, true);
  return {whole.whole_response()["choices"][0], add_up(events + stream.final_events())};
}

// One choice over kOutput's prompt with the deepseek_r1 reasoning parser and hermes calls.
GenerationPlan r1_hermes_plan(const tokenizer::ByteTokenizer& tok, Endpoint endpoint,
                              const char* id) {
  GenerationPlan plan;
  plan.endpoint = endpoint;
  plan.id = id;
  plan.prompts = {tok.encode("<|user|>\nweather?\n<|assistant|>\n<think>\n", false)};
  plan.prompt_tokens = static_cast<int64_t>(plan.prompts[0].size());
  plan.choices.resize(1);
  plan.reasoning_parser = ReasoningParser::kDeepSeekR1;
  plan.tool_call_parser = ToolCallParser::kHermes;
  return plan;
}

TEST(GenerationResponder, ReasoningAndToolCallsWholeAndStreamed) {
  SEEDED_RNG(rng);
  const tokenizer::ByteTokenizer tok(512, 256);
  GenerationPlan plan = r1_hermes_plan(tok, Endpoint::kChat, "chatcmpl-test");

  const auto [choice, streamed] = respond_both_ways(plan, tok, kOutput, rng);
  const json& message = choice["message"];
  EXPECT_EQ(message["reasoning"], "check the weather");
  EXPECT_EQ(message["content"], "On it.");
  ASSERT_EQ(message["tool_calls"].size(), 2u);
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "weather");
  EXPECT_EQ(message["tool_calls"][0]["function"]["arguments"], R"({"city": "Paris"})");
  EXPECT_EQ(message["tool_calls"][1]["function"]["name"], "time");
  EXPECT_EQ(message["tool_calls"][1]["type"], "function");
  EXPECT_EQ(choice["finish_reason"], "tool_calls");

  const auto& [reasoning, content, calls, finish] = streamed;
  EXPECT_EQ(reasoning, "check the weather");
  EXPECT_EQ(content, "On it.\n");  // streamed, the newline between the calls is content too
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["index"], 0);
  EXPECT_EQ(calls[1]["index"], 1);
  EXPECT_EQ(calls[0]["function"], message["tool_calls"][0]["function"]);
  EXPECT_EQ(calls[1]["function"], message["tool_calls"][1]["function"]);
  EXPECT_EQ(finish, "tool_calls");
}

// parallel_tool_calls false keeps the first call only, whole and streamed; a length cut after a
// call stays "length" (vLLM 0.34's resolve_finish_reason), so a client sees the truncation.
TEST(GenerationResponder, OneCallWithoutParallelToolCallsAndLengthStaysLength) {
  SEEDED_RNG(rng);
  const tokenizer::ByteTokenizer tok(512, 256);
  GenerationPlan plan = r1_hermes_plan(tok, Endpoint::kChat, "chatcmpl-test");
  plan.parallel_tool_calls = false;
  const auto [choice, streamed] = respond_both_ways(plan, tok, kOutput, rng);
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u);
  EXPECT_EQ(choice["message"]["tool_calls"][0]["function"]["name"], "weather");
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  ASSERT_EQ(streamed.calls.size(), 1u);
  EXPECT_EQ(streamed.calls[0]["function"], choice["message"]["tool_calls"][0]["function"]);
  EXPECT_EQ(streamed.finish, "tool_calls");

  plan.parallel_tool_calls = true;
  const SamplingRequest request;
  GenerationResponder whole(plan, request, tok);
  std::vector<ChoiceDelta> cut = pieces(rng);
  cut.back().finish_reason = "length";
  whole.add(cut, false);
  const json message = whole.whole_response()["choices"][0];
  EXPECT_EQ(message["message"]["tool_calls"].size(), 2u);
  EXPECT_EQ(message["finish_reason"], "length");
  GenerationResponder stream(plan, request, tok);
  std::string events = stream.first_events();
  for (const ChoiceDelta& d : cut) events += stream.add({d}, true);
  const Streamed s = add_up(events + stream.final_events());
  EXPECT_EQ(s.calls.size(), 2u);
  EXPECT_EQ(s.finish, "length");
}

// The GLM-5 recipe's parsers (glm45, glm47): reasoning until </think>, the text before the
// calls as content, calls typed by the tools' schemas, whole and streamed alike.
TEST(GenerationResponder, GlmReasoningAndToolCallsWholeAndStreamed) {
  SEEDED_RNG(rng);
  constexpr std::string_view kGlmOutput =
      "check the weather</think>On it.<tool_call>get_weather\n<arg_key>city</arg_key>\n"
      "<arg_value> Paris </arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n"
      "</tool_call><tool_call>get_time</tool_call>";
  const tokenizer::ByteTokenizer tok(512, 256);
  GenerationPlan plan;
  plan.endpoint = Endpoint::kChat;
  plan.id = "chatcmpl-test";
  plan.prompts = {tok.encode("<|user|>weather?<|assistant|><think>", false)};
  plan.choices.resize(1);
  plan.reasoning_parser = ReasoningParser::kGlm45;
  plan.thinking = thinking_requested(ReasoningParser::kGlm45, nullptr);
  plan.tool_call_parser = ToolCallParser::kGlm47;
  plan.tools = json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"},
      "days": {"type": "integer"}}}}}, {"type": "function", "function": {"name": "get_time"}}])");

  const auto [choice, got] = respond_both_ways(plan, tok, kGlmOutput, rng);
  const json& message = choice["message"];
  EXPECT_EQ(message["reasoning"], "check the weather");
  EXPECT_EQ(message["content"], "On it.");
  ASSERT_EQ(message["tool_calls"].size(), 2u);
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(message["tool_calls"][0]["function"]["arguments"], R"({"city": " Paris ", "days": 3})");
  EXPECT_EQ(message["tool_calls"][1]["function"]["arguments"], "{}");
  EXPECT_EQ(choice["finish_reason"], "tool_calls");

  EXPECT_EQ(got.reasoning, "check the weather");
  EXPECT_EQ(got.content, "On it.");
  ASSERT_EQ(got.calls.size(), 2u);
  EXPECT_EQ(got.calls[0]["function"], message["tool_calls"][0]["function"]);
  EXPECT_EQ(got.calls[1]["function"], message["tool_calls"][1]["function"]);
  EXPECT_EQ(got.calls[1]["index"], 1);
  EXPECT_EQ(got.finish, "tool_calls");
}

// The DeepSeek-V3.2 recipe's parsers (deepseek_v3 with thinking, deepseek_v32): one DSML block
// of two invokes, typed by string="..." and the schema.
TEST(GenerationResponder, DsmlToolCallsWholeAndStreamed) {
  SEEDED_RNG(rng);
  const std::string output =
      "plan</think>Looking.\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"search\">\n"
      "<｜DSML｜parameter name=\"query\" string=\"true\">杭州</｜DSML｜parameter>\n"
      "<｜DSML｜parameter name=\"limit\" string=\"false\">5</｜DSML｜parameter>\n"
      "</｜DSML｜invoke>\n<｜DSML｜invoke name=\"now\">\n</｜DSML｜invoke>\n"
      "</｜DSML｜function_calls>";
  const tokenizer::ByteTokenizer tok(512, 256);
  GenerationPlan plan;
  plan.endpoint = Endpoint::kChat;
  plan.id = "chatcmpl-test";
  plan.prompts = {tok.encode("<｜User｜>hi<｜Assistant｜><think>", false)};
  plan.choices.resize(1);
  plan.reasoning_parser = ReasoningParser::kDeepSeekV3;
  plan.thinking = true;
  plan.tool_call_parser = ToolCallParser::kDeepSeekV32;
  plan.tools = json::parse(R"([{"type": "function", "function": {"name": "search",
      "parameters": {"type": "object", "properties": {"limit": {"type": "integer"}}}}}])");

  const auto [choice, got] = respond_both_ways(plan, tok, output, rng);
  const json& message = choice["message"];
  EXPECT_EQ(message["reasoning"], "plan");
  EXPECT_EQ(message["content"], "Looking.\n\n");
  ASSERT_EQ(message["tool_calls"].size(), 2u);
  EXPECT_EQ(message["tool_calls"][0]["function"]["arguments"], R"({"query": "杭州", "limit": 5})");
  EXPECT_EQ(message["tool_calls"][1]["function"]["name"], "now");
  EXPECT_EQ(choice["finish_reason"], "tool_calls");

  EXPECT_EQ(got.reasoning, "plan");
  EXPECT_EQ(got.content, "Looking.\n\n");
  ASSERT_EQ(got.calls.size(), 2u);
  EXPECT_EQ(got.calls[0]["function"], message["tool_calls"][0]["function"]);
  EXPECT_EQ(got.calls[1]["index"], 1);
  EXPECT_EQ(got.finish, "tool_calls");
}

// A long prompt whose template closed the thinking (it ends in </think>, as Qwen3's with
// enable_thinking false): the whole output is content, and the reasoning null.
TEST(GenerationResponder, APromptThatEndsInEndOfThinkingGivesContentOnly) {
  const tokenizer::ByteTokenizer tok(512, 256);
  GenerationPlan plan;
  plan.endpoint = Endpoint::kChat;
  plan.prompts = {
      tok.encode(std::string(500, 'x') + "<|assistant|>\n<think>\n\n</think>\n\n", false)};
  plan.choices.resize(1);
  plan.reasoning_parser = ReasoningParser::kDeepSeekR1;
  const SamplingRequest request;
  GenerationResponder responder(plan, request, tok);
  ChoiceDelta d;
  d.text = "plain answer";
  d.token_ids = {1};
  d.finish_reason = "stop";
  responder.add({d}, false);
  const json message = responder.whole_response()["choices"][0]["message"];
  EXPECT_EQ(message["content"], "plain answer");
  EXPECT_TRUE(message["reasoning"].is_null());
}

// The same output through /v1/responses: whole, a reasoning item, the message and two function
// calls; streamed, events whose items carry the same reasoning and calls (the newline between
// the calls is content there too, so a message item sits between them), numbered from 0, and
// the terminal event repeats the streamed items.
TEST(GenerationResponder, ResponsesItemsWholeAndStreamed) {
  SEEDED_RNG(rng);
  const tokenizer::ByteTokenizer tok(512, 256);
  for (const bool parallel : {true, false}) {
    GenerationPlan plan = r1_hermes_plan(tok, Endpoint::kResponses, "resp_test");
    plan.responses = std::make_shared<ResponsesRequest>(
        parse_responses_request({{"input", "weather?"}, {"parallel_tool_calls", parallel}}));
    const SamplingRequest request;
    GenerationResponder whole(plan, request, tok);
    whole.add(pieces(rng), false);
    const json response = whole.whole_response();
    EXPECT_EQ(response["object"], "response");
    EXPECT_EQ(response["status"], "completed");
    const json& output = response["output"];
    ASSERT_EQ(output.size(), parallel ? 4u : 3u);
    EXPECT_EQ(output[0]["content"][0]["text"], "check the weather");
    EXPECT_EQ(output[1]["content"][0]["text"], "On it.");
    EXPECT_EQ(output[2]["name"], "weather");
    EXPECT_EQ(output[2]["arguments"], R"({"city": "Paris"})");
    if (parallel) {
      EXPECT_EQ(output[3]["name"], "time");
    }
    const int64_t reasoning_tokens =
        response["usage"]["output_tokens_details"]["reasoning_tokens"].get<int64_t>();
    EXPECT_GT(reasoning_tokens, 0);
    EXPECT_LT(reasoning_tokens, response["usage"]["output_tokens"].get<int64_t>());

    GenerationResponder stream(plan, request, tok);
    std::string sse = stream.first_events();
    for (const ChoiceDelta& d : pieces(rng)) sse += stream.add({d}, true);
    sse += stream.final_events();
    std::vector<json> events;
    for (size_t at = sse.find("event: "); at != std::string::npos;
         at = sse.find("event: ", at + 1)) {
      const size_t data = sse.find("\ndata: ", at);
      const json event = json::parse(sse.substr(data + 7, sse.find("\n\n", data) - data - 7));
      EXPECT_EQ(sse.substr(at + 7, data - at - 7), event["type"]);
      EXPECT_EQ(event["sequence_number"], events.size());
      events.push_back(event);
    }
    ASSERT_GE(events.size(), 3u);
    EXPECT_EQ(events[0]["type"], "response.created");
    const json& final = events.back()["response"];
    EXPECT_EQ(events.back()["type"], "response.completed");
    std::vector<json> done;
    for (const json& e : events) {
      if (e["type"] == "response.output_item.done") done.push_back(e["item"]);
    }
    EXPECT_EQ(final["output"], json(done));
    std::vector<json> calls;
    std::string text;
    for (const json& item : done) {
      if (item["type"] == "function_call") calls.push_back(item);
      if (item["type"] == "message") text += item["content"][0]["text"].get<std::string>();
    }
    EXPECT_EQ(done.front()["content"][0]["text"], "check the weather");
    EXPECT_EQ(text, "On it.\n");  // only calls are dropped without parallel_tool_calls
    ASSERT_EQ(calls.size(), parallel ? 2u : 1u);
    EXPECT_EQ(calls[0]["arguments"], output[2]["arguments"]);
    if (parallel) {
      EXPECT_EQ(calls[1]["arguments"], output[3]["arguments"]);
    }
  }
}

// The same output through /v1/messages: whole, a thinking block, the text and two tool_use
// blocks with their inputs, stop_reason tool_use; streamed, blocks with the same reasoning and
// inputs (the newline between the calls waits for the first call's block to close, then
// follows as a text block of its own).
TEST(GenerationResponder, AnthropicBlocksWholeAndStreamed) {
  SEEDED_RNG(rng);
  const tokenizer::ByteTokenizer tok(512, 256);
  GenerationPlan plan = r1_hermes_plan(tok, Endpoint::kMessages, "chatcmpl-test");
  plan.prompt_tokens_details = true;
  plan.cache_block_tokens = 4;
  const SamplingRequest request;
  GenerationResponder whole(plan, request, tok);
  std::vector<ChoiceDelta> deltas = pieces(rng);
  deltas.front().num_cached_tokens = 8;
  whole.add(deltas, false);
  const json message = whole.whole_response();
  EXPECT_EQ(message["type"], "message");
  EXPECT_EQ(message["id"], "chatcmpl-test");
  EXPECT_EQ(message["stop_reason"], "tool_use");
  // The prompt's full blocks of 4 are in the cache: 8 tokens were read, the rest written.
  const int64_t created = plan.prompt_tokens / 4 * 4 - 8;
  EXPECT_EQ(message["usage"]["input_tokens"], plan.prompt_tokens - 8 - created);
  EXPECT_EQ(message["usage"]["cache_read_input_tokens"], 8);
  EXPECT_EQ(message["usage"]["cache_creation_input_tokens"], created);
  EXPECT_EQ(message["usage"]["output_tokens"], deltas.size());
  const json& content = message["content"];
  ASSERT_EQ(content.size(), 4u) << content.dump();
  EXPECT_EQ(content[0]["thinking"], "check the weather");
  EXPECT_EQ(content[1], json::parse(R"({"type": "text", "text": "On it."})"));
  EXPECT_EQ(content[2]["name"], "weather");
  EXPECT_EQ(content[2]["input"], json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(content[3]["name"], "time");
  EXPECT_EQ(content[3]["input"], json::object());

  GenerationResponder stream(plan, request, tok);
  std::string sse = stream.first_events();
  for (const ChoiceDelta& d : pieces(rng)) sse += stream.add({d}, true);
  sse += stream.final_events();
  std::vector<json> blocks;
  std::vector<std::string> types;
  for (size_t at = sse.find("data: "); at != std::string::npos; at = sse.find("data: ", at + 1)) {
    const json e = json::parse(sse.substr(at + 6, sse.find("\n\n", at) - at - 6));
    types.push_back(e["type"]);
    if (e["type"] == "content_block_start") blocks.push_back(e["content_block"]);
    if (e["type"] != "content_block_delta") continue;
    const json& d = e["delta"];
    json& b = blocks.at(e["index"].get<size_t>());
    if (d["type"] == "thinking_delta")
      b["thinking"] = b["thinking"].get<std::string>() + d["thinking"].get<std::string>();
    if (d["type"] == "text_delta")
      b["text"] = b["text"].get<std::string>() + d["text"].get<std::string>();
    if (d["type"] == "input_json_delta")
      b["partial"] = b.value("partial", "") + d["partial_json"].get<std::string>();
  }
  EXPECT_EQ(types.front(), "message_start");
  EXPECT_EQ(types[types.size() - 2], "message_delta");
  EXPECT_EQ(types.back(), "message_stop");
  ASSERT_EQ(blocks.size(), 5u) << sse;
  EXPECT_EQ(blocks[0]["thinking"], "check the weather");
  EXPECT_EQ(blocks[1]["text"], "On it.");
  EXPECT_EQ(json::parse(blocks[2]["partial"].get<std::string>()), content[2]["input"]);
  EXPECT_EQ(blocks[3]["text"], "\n");
  EXPECT_EQ(json::parse(blocks[4]["partial"].get<std::string>()), content[3]["input"]);
  EXPECT_NE(sse.find(R"("stop_reason":"tool_use")"), std::string::npos);
}

}  // namespace
}  // namespace ctxpar::server
