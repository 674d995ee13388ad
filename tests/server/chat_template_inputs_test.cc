// What the chat template sees of tools and assistant tool calls, as vLLM hands them over.
#include "ctxpar/server/chat_template_inputs.h"

#include <gtest/gtest.h>

#include "ctxpar/server/api_error.h"

namespace ctxpar::server {
namespace {

using nlohmann::ordered_json;

TEST(ChatTemplateInputs, ToolsAsVllmDumpsThem) {
  const ordered_json tools = ordered_json::parse(R"([
      {"function": {"parameters": {"type": "object"}, "name": "a", "x": 1}, "type": "function"},
      {"type": "function", "defer_loading": true,
       "function": {"name": "b", "description": "bee", "strict": false}},
      {"type": "function", "defer_loading": true,
       "function": {"name": "c", "defer_loading": false, "strict": null}}])");
  EXPECT_EQ(template_tools(tools), ordered_json::parse(R"([
      {"type": "function", "function": {"name": "a", "description": null,
                                        "parameters": {"type": "object"}}},
      {"type": "function", "function": {"name": "b", "description": "bee", "parameters": null,
                                        "strict": false, "defer_loading": true},
       "defer_loading": true},
      {"type": "function", "function": {"name": "c", "description": null, "parameters": null,
                                        "defer_loading": false},
       "defer_loading": true}])"));
  EXPECT_EQ(template_tools(ordered_json()), ordered_json());
}

TEST(ChatTemplateInputs, CallArgumentsBecomeObjects) {
  ordered_json m = ordered_json::parse(R"({"role": "assistant", "tool_calls": [
      {"id": "1", "function": {"name": "f", "arguments": "{\"z\": 1, \"a\": {\"y\": 2, \"b\": 3}}"}},
      {"id": "2", "type": "function", "function": {"name": "f", "arguments": {"k": "v"}}},
      {"id": "3", "function": {"name": "f", "arguments": ""}},
      {"id": "4", "function": {"name": "f"}},
      {"id": "5", "function": {"name": "f", "arguments": "{bad"}},
      {"id": "6", "function": {"name": "f", "arguments": "7"}}]})");
  parse_tool_call_arguments(m, 0);
  const ordered_json& calls = m["tool_calls"];
  EXPECT_EQ(calls[0]["function"]["arguments"].dump(), R"({"z":1,"a":{"y":2,"b":3}})");
  EXPECT_EQ(calls[1]["function"]["arguments"], ordered_json::parse(R"({"k": "v"})"));
  for (size_t k = 2; k < 6; ++k) {
    EXPECT_EQ(calls[k]["function"]["arguments"], ordered_json::object()) << k;
  }
  ordered_json empty = ordered_json::parse(R"({"role": "assistant", "tool_calls": []})");
  parse_tool_call_arguments(empty, 0);
  EXPECT_FALSE(empty.contains("tool_calls"));
  // Other roles are left as they are.
  ordered_json user = ordered_json::parse(R"({"role": "user", "tool_calls": [1]})");
  parse_tool_call_arguments(user, 0);
  EXPECT_EQ(user["tool_calls"], ordered_json::parse("[1]"));
  for (const char* bad : {R"({"role": "assistant", "tool_calls": [1]})",
                          R"({"role": "assistant", "tool_calls": [{"type": "custom",
                              "function": {"name": "f"}}]})",
                          R"({"role": "assistant", "tool_calls": [{"function": "f"}]})"}) {
    ordered_json b = ordered_json::parse(bad);
    EXPECT_THROW(parse_tool_call_arguments(b, 3), ApiError) << bad;
  }
}

TEST(ChatTemplateInputs, MessagesAsVllmsConversation) {
  const auto convert = [](const char* text, ChatContentFormat format) {
    const ordered_json ordered = ordered_json::parse(text);
    return template_message(nlohmann::json::parse(text), ordered, 2, format);
  };
  // Keys vLLM does not copy go; an assistant's reasoning is also reasoning_content.
  EXPECT_EQ(convert(R"({"role": "assistant", "content": null, "reasoning": "hm", "extra": 1,
                        "reasoning_content": "old", "name": "bot",
                        "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{}"}}]})",
                    ChatContentFormat::kString),
            ordered_json::parse(R"({"role": "assistant", "content": "",
                                    "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {}}}],
                                    "reasoning": "hm", "reasoning_content": "hm", "name": "bot"})"));
  // A tool result's text parts are one string in either format.
  for (const ChatContentFormat format : {ChatContentFormat::kString, ChatContentFormat::kOpenAi}) {
    EXPECT_EQ(convert(R"({"role": "tool", "tool_call_id": "c", "content": [
                          {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]})",
                      format),
              ordered_json::parse(R"({"role": "tool", "content": "a\nb", "tool_call_id": "c"})"));
  }
  EXPECT_EQ(convert(R"({"role": "user", "content": "x"})", ChatContentFormat::kOpenAi),
            ordered_json::parse(R"({"role": "user", "content": [{"type": "text", "text": "x"}]})"));
  // Claude Code's billing header line leaves system messages.
  EXPECT_EQ(
      convert(R"({"role": "system", "content": "x-anthropic-billing-header: cch=1;\nBe brief"})",
              ChatContentFormat::kString)["content"],
      "Be brief");
  EXPECT_EQ(convert(R"({"role": "system", "content": [
                        {"type": "text", "text": "x-anthropic-billing-header: cch=2;"},
                        {"type": "text", "text": "Be brief"}]})",
                    ChatContentFormat::kOpenAi)["content"],
            ordered_json::parse(R"([{"type": "text", "text": "Be brief"}])"));
  EXPECT_EQ(convert(R"({"role": "user", "content": "x-anthropic-billing-header: kept"})",
                    ChatContentFormat::kString)["content"],
            "x-anthropic-billing-header: kept");
}

}  // namespace
}  // namespace ctxpar::server
