// GenerationResponder with both chat parsers on: an output with thinking, text and two tool
// calls, fed in random pieces, gives vLLM's message (reasoning, the text before the calls as
// content, tool_calls, finish_reason "tool_calls") whole, and streamed chunks whose reasoning,
// content and tool calls add up to the same.
#include "ctxpar/server/generation_responder.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

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
std::vector<ChoiceDelta> pieces(std::mt19937_64& rng) {
  std::vector<ChoiceDelta> out;
  for (size_t at = 0; at < kOutput.size();) {
    const size_t n = std::min(kOutput.size() - at, size_t{1} + rng() % 7);
    ChoiceDelta d;
    d.text = std::string(kOutput.substr(at, n));
    d.token_ids = {static_cast<int32_t>(at)};
    at += n;
    if (at == kOutput.size()) d.finish_reason = "stop";
    out.push_back(std::move(d));
  }
  return out;
}

TEST(GenerationResponder, ReasoningAndToolCallsWholeAndStreamed) {
  SEEDED_RNG(rng);
  const tokenizer::ByteTokenizer tok(512, 256);
  GenerationPlan plan;
  plan.endpoint = Endpoint::kChat;
  plan.id = "chatcmpl-test";
  plan.prompts = {tok.encode("<|user|>\nweather?\n<|assistant|>\n<think>\n", false)};
  plan.choices.resize(1);
  plan.reasoning_parser = ReasoningParser::kDeepSeekR1;
  plan.parse_tool_calls = true;
  const SamplingRequest request;

  GenerationResponder whole(plan, request, tok);
  whole.add(pieces(rng), false);
  const json choice = whole.whole_response()["choices"][0];
  const json& message = choice["message"];
  EXPECT_EQ(message["reasoning"], "check the weather");
  EXPECT_EQ(message["content"], "On it.");
  ASSERT_EQ(message["tool_calls"].size(), 2u);
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "weather");
  EXPECT_EQ(message["tool_calls"][0]["function"]["arguments"], R"({"city": "Paris"})");
  EXPECT_EQ(message["tool_calls"][1]["function"]["name"], "time");
  EXPECT_EQ(message["tool_calls"][1]["type"], "function");
  EXPECT_EQ(choice["finish_reason"], "tool_calls");

  GenerationResponder stream(plan, request, tok);
  std::string events = stream.first_events();
  for (const ChoiceDelta& d : pieces(rng)) events += stream.add({d}, true);
  std::string reasoning, content;
  std::vector<json> calls;
  json finish;
  for (size_t at = events.find("data: "); at != std::string::npos;
       at = events.find("data: ", at + 1)) {
    const json chunk = json::parse(events.substr(at + 6, events.find("\n\n", at) - at - 6));
    const json& c = chunk["choices"][0];
    reasoning += c["delta"].value("reasoning", "");
    if (c["delta"].contains("content")) content += c["delta"]["content"].get<std::string>();
    for (const json& call : c["delta"].value("tool_calls", json::array())) calls.push_back(call);
    if (!c["finish_reason"].is_null()) finish = c["finish_reason"];
  }
  EXPECT_EQ(reasoning, "check the weather");
  EXPECT_EQ(content, "On it.\n");  // streamed, the newline between the calls is content too
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0]["index"], 0);
  EXPECT_EQ(calls[1]["index"], 1);
  EXPECT_EQ(calls[0]["function"], message["tool_calls"][0]["function"]);
  EXPECT_EQ(calls[1]["function"], message["tool_calls"][1]["function"]);
  EXPECT_EQ(finish, "tool_calls");
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

}  // namespace
}  // namespace ctxpar::server
