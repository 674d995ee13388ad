// Request parsing: vLLM's defaults, its 400s with the offending field as param, fields ctxpar
// refuses unless at their defaults, and the max_tokens / context-length rules.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "ctxpar/server/api_error.h"
#include "ctxpar/server/openai_protocol.h"
#include "ctxpar/tokenizer/byte_tokenizer.h"

namespace ctxpar::server {
namespace {

using nlohmann::json;

// The ApiError a parse throws (status 0 when it throws none).
ApiError error_of(const json& body, bool chat = false) {
  try {
    if (chat) {
      parse_chat_request(body, {});
    } else {
      parse_completion_request(body, {});
    }
  } catch (const ApiError& e) {
    return e;
  }
  return ApiError(0, "", "no error");
}

void expect_400(const json& body, const std::string& fragment, const std::string& param,
                bool chat = false) {
  const ApiError e = error_of(body, chat);
  EXPECT_EQ(e.status(), 400) << body.dump();
  EXPECT_EQ(e.type(), "BadRequestError");
  EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  if (!param.empty()) {
    EXPECT_EQ(e.param().value_or(""), param) << e.what();
  }
  const json shape = e.to_json();
  EXPECT_EQ(shape["error"]["code"], 400);
  EXPECT_EQ(shape["error"]["message"], e.what());
}

TEST(OpenAiProtocol, CompletionDefaultsAreVllms) {
  const CompletionRequest r = parse_completion_request({{"prompt", "hi"}}, {});
  ASSERT_EQ(r.prompts.size(), 1u);
  EXPECT_EQ(std::get<std::string>(r.prompts[0]), "hi");
  EXPECT_EQ(r.max_tokens, 16);
  EXPECT_EQ(r.params.temperature, 1.0f);
  EXPECT_EQ(r.params.top_p, 1.0f);
  EXPECT_EQ(r.params.top_k, 0);
  EXPECT_EQ(r.n, 1);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.logprobs.has_value());
  EXPECT_FALSE(r.params.seed.has_value());
  // A null max_tokens is the default too; generation_config defaults come before OpenAI's.
  GenerationDefaults d;
  d.temperature = 0.6f;
  d.top_k = 20;
  const CompletionRequest g =
      parse_completion_request({{"prompt", "hi"}, {"max_tokens", nullptr}}, d);
  EXPECT_EQ(g.max_tokens, 16);
  EXPECT_EQ(g.params.temperature, 0.6f);
  EXPECT_EQ(g.params.top_k, 20);
  EXPECT_EQ(parse_completion_request({{"prompt", "x"}, {"temperature", 0.3}}, d).params.temperature,
            0.3f);
  // seed -1 means none; a tiny temperature is raised to 0.01 as vLLM does.
  EXPECT_FALSE(parse_completion_request({{"prompt", "x"}, {"seed", -1}}, {}).params.seed);
  EXPECT_EQ(
      parse_completion_request({{"prompt", "x"}, {"temperature", 0.001}}, {}).params.temperature,
      0.01f);
}

TEST(OpenAiProtocol, PromptsInEveryForm) {
  const CompletionRequest texts = parse_completion_request({{"prompt", {"a", "b"}}}, {});
  EXPECT_EQ(texts.prompts.size(), 2u);
  const CompletionRequest ids = parse_completion_request({{"prompt", {1, 2, 3}}}, {});
  ASSERT_EQ(ids.prompts.size(), 1u);
  EXPECT_EQ(std::get<std::vector<int32_t>>(ids.prompts[0]), (std::vector<int32_t>{1, 2, 3}));
  const CompletionRequest lists =
      parse_completion_request({{"prompt", json::array({{1, 2}, {3}})}}, {});
  EXPECT_EQ(lists.prompts.size(), 2u);
  expect_400({{"max_tokens", 3}}, "Either prompt or prompt_embeds", "prompt");
  expect_400({{"prompt", ""}}, "non-empty", "prompt");
  expect_400({{"prompt", json::array()}}, "non-empty", "prompt");
  expect_400({{"prompt", {1, -4}}}, "greater than or equal to 0", "prompt");
  expect_400({{"prompt", {1, 2.5}}}, "valid integer", "prompt");
  expect_400({{"prompt", json::array({{1}, 7})}}, "prompt[1]", "prompt");
  expect_400({{"prompt", 3}}, "Input should be", "prompt");
}

TEST(OpenAiProtocol, WrongTypesAndValuesNameTheField) {
  expect_400(json::array({1}), "JSON object", "");
  expect_400({{"prompt", "x"}, {"max_tokens", "7"}}, "valid integer", "max_tokens");
  expect_400({{"prompt", "x"}, {"max_tokens", 0}}, "max_tokens must be at least 1, got 0.",
             "max_tokens");
  expect_400({{"prompt", "x"}, {"temperature", -0.5}}, "temperature must be non-negative",
             "temperature");
  expect_400({{"prompt", "x"}, {"temperature", "warm"}}, "valid number", "temperature");
  expect_400({{"prompt", "x"}, {"top_k", -2}}, "top_k must be 0 (disable), or at least 1", "top_k");
  expect_400({{"prompt", "x"}, {"min_p", 1.5}}, "min_p must be in [0, 1], got 1.5", "min_p");
  expect_400({{"prompt", "x"}, {"presence_penalty", 3}}, "presence_penalty must be in [-2, 2]",
             "presence_penalty");
  expect_400({{"prompt", "x"}, {"repetition_penalty", 0}}, "repetition_penalty must be greater",
             "repetition_penalty");
  expect_400({{"prompt", "x"}, {"n", 0}}, "n must be at least 1, got 0.", "n");
  expect_400({{"prompt", "x"}, {"n", 2}, {"temperature", 0}}, "greedy sampling", "n");
  expect_400({{"prompt", "x"}, {"stop", {"a", 1}}}, "string", "stop");
  expect_400({{"prompt", "x"}, {"stop", ""}}, "stop cannot contain an empty string.", "stop");
  expect_400({{"prompt", "x"}, {"stream", "true"}}, "valid boolean", "stream");
  expect_400({{"prompt", "x"}, {"stream_options", {{"include_usage", true}}}},
             "Stream options can only be defined when `stream=True`.", "stream_options");
  expect_400({{"prompt", "x"}, {"logprobs", -2}}, "`logprobs` must be a positive value or -1.",
             "logprobs");
  expect_400({{"prompt", "x"}, {"prompt_logprobs", -2}},
             "`prompt_logprobs` must be a positive value or -1.", "prompt_logprobs");
  expect_400({{"prompt", "x"}, {"prompt_logprobs", 1}, {"stream", true}},
             "`prompt_logprobs` are not available when `stream=True`.", "prompt_logprobs");
  expect_400({{"prompt", "x"}, {"prompt_logprobs", -1}, {"stream", true}},
             "`prompt_logprobs` are not available when `stream=True`.", "prompt_logprobs");
  expect_400({{"prompt", "x"}, {"stop_token_ids", {3, -1}}}, "greater than or equal to 0",
             "stop_token_ids");
  expect_400({{"prompt", "x"}, {"min_tokens", 20}}, "min_tokens must be less than or equal to",
             "min_tokens");
}

TEST(OpenAiProtocol, UnimplementedFieldsOnlyAtTheirDefaults) {
  EXPECT_NO_THROW(parse_completion_request({{"prompt", "x"},
                                            {"logit_bias", json::object()},
                                            {"use_beam_search", false},
                                            {"response_format", {{"type", "text"}}},
                                            {"user", "u"},
                                            {"unknown_field", 3}},
                                           {}));
  // logit_bias and allowed_token_ids as vLLM takes them: biases clamped to [-100, 100].
  const CompletionRequest biased = parse_completion_request(
      {{"prompt", "x"}, {"logit_bias", {{"5", 1.5}, {"7", -300}}}, {"allowed_token_ids", {5, 9}}},
      {});
  EXPECT_EQ(biased.params.logit_bias,
            (std::vector<std::pair<int32_t, float>>{{5, 1.5f}, {7, -100.0f}}));
  EXPECT_EQ(biased.params.allowed_token_ids, (std::vector<int32_t>{5, 9}));
  expect_400({{"prompt", "x"}, {"logit_bias", {{"x5", 1.0}, {"-2", 1.0}}}},
             "logit_bias contains key(s) that cannot be converted to integer token IDs: ['-2', "
             "'x5']",
             "logit_bias");
  expect_400({{"prompt", "x"}, {"logit_bias", {{"5", "up"}}}}, "dictionary of numbers",
             "logit_bias");
  expect_400({{"prompt", "x"}, {"allowed_token_ids", json::array()}},
             "allowed_token_ids is not None and empty!", "allowed_token_ids");
  expect_400({{"prompt", "x"}, {"allowed_token_ids", {1, -1}}}, "greater than or equal to 0",
             "allowed_token_ids");
  expect_400({{"prompt", "x"}, {"use_beam_search", true}}, "not supported", "use_beam_search");
  // response_format / structured_outputs are checked by output_constraint.h.
  EXPECT_NO_THROW(parse_completion_request(
      {{"prompt", "x"}, {"response_format", {{"type", "json_object"}}}}, {}));
}

TEST(OpenAiProtocol, StreamOptions) {
  const CompletionRequest r = parse_completion_request(
      {{"prompt", "x"}, {"stream", true}, {"stream_options", json::object()}}, {});
  EXPECT_TRUE(r.include_usage);  // include_usage defaults to true once stream_options is given
  const CompletionRequest c = parse_completion_request(
      {{"prompt", "x"},
       {"stream", true},
       {"stream_options", {{"include_usage", true}, {"continuous_usage_stats", true}}}},
      {});
  EXPECT_TRUE(c.continuous_usage_stats);
}

TEST(OpenAiProtocol, ChatRequests) {
  const json user = json::array({{{"role", "user"}, {"content", "hi"}}});
  const ChatRequest r =
      parse_chat_request({{"messages", user}, {"max_tokens", 5}, {"max_completion_tokens", 9}}, {});
  EXPECT_EQ(r.max_tokens, 9);  // max_completion_tokens wins over the deprecated max_tokens
  EXPECT_FALSE(parse_chat_request({{"messages", user}}, {}).max_tokens.has_value());
  EXPECT_TRUE(r.add_generation_prompt);
  const ChatRequest lp =
      parse_chat_request({{"messages", user}, {"logprobs", true}, {"top_logprobs", 3}}, {});
  EXPECT_EQ(lp.params.logprobs, 3);
  expect_400({{"messages", user}, {"top_logprobs", 3}}, "`logprobs` must be set to true",
             "top_logprobs", true);
  expect_400({{"messages", user}, {"top_logprobs", -1}}, "`logprobs` must be set to true",
             "top_logprobs", true);
  expect_400({{"messages", user}, {"logprobs", true}, {"top_logprobs", -2}},
             "`top_logprobs` must be a positive value or -1.", "top_logprobs", true);
  // As vLLM: 0 without logprobs asks for nothing; -1 (the vocabulary) and prompt_logprobs are
  // counts the handler resolves.
  EXPECT_FALSE(parse_chat_request({{"messages", user}, {"top_logprobs", 0}}, {}).params.logprobs);
  const ChatRequest all = parse_chat_request(
      {{"messages", user}, {"logprobs", true}, {"top_logprobs", -1}, {"prompt_logprobs", 2}}, {});
  EXPECT_EQ(all.params.logprobs, -1);
  EXPECT_EQ(all.params.prompt_logprobs, 2);
  EXPECT_EQ(parse_completion_request({{"prompt", "x"}, {"logprobs", -1}}, {}).params.logprobs, -1);
  // reasoning_effort reaches the template, with enable_thinking unless the kwargs set it.
  const ChatRequest none = parse_chat_request(
      {{"messages", user}, {"reasoning_effort", "none"}, {"chat_template_kwargs", {{"k", 1}}}}, {});
  EXPECT_EQ(none.chat_template_kwargs,
            json({{"k", 1}, {"reasoning_effort", "none"}, {"enable_thinking", false}}));
  const ChatRequest high = parse_chat_request(
      {{"messages", user},
       {"reasoning_effort", "high"},
       {"chat_template_kwargs", {{"reasoning_effort", "low"}, {"enable_thinking", false}}}},
      {});
  EXPECT_EQ(high.chat_template_kwargs,
            json({{"reasoning_effort", "high"}, {"enable_thinking", false}}));
  // --default-chat-template-kwargs: under the request's, except its null and "auto" values.
  GenerationDefaults defaults;
  defaults.chat_template_kwargs = {{"enable_thinking", false}, {"x", 1}, {"y", 2}};
  const ChatRequest merged =
      parse_chat_request({{"messages", user},
                          {"reasoning_effort", "high"},
                          {"chat_template_kwargs", {{"x", nullptr}, {"y", "auto"}, {"z", 3}}}},
                         defaults);
  EXPECT_EQ(
      merged.chat_template_kwargs,
      json(
          {{"enable_thinking", true}, {"x", 1}, {"y", 2}, {"z", 3}, {"reasoning_effort", "high"}}));
  EXPECT_EQ(parse_chat_request({{"messages", user}}, defaults).chat_template_kwargs,
            defaults.chat_template_kwargs);
  expect_400({{"messages", user}, {"reasoning_effort", "extreme"}}, "got 'extreme'",
             "reasoning_effort", true);
  expect_400({{"max_tokens", 3}}, "messages: Field required", "messages", true);
  expect_400({{"messages", json::array()}}, "at least 1 item", "messages", true);
  expect_400({{"messages", json::array({{{"content", "x"}}})}}, "\"role\"", "messages", true);
  expect_400({{"messages", json::array({{{"role", "user"}, {"content", 5}}})}}, "content",
             "messages", true);
  expect_400({{"messages", user}, {"continue_final_message", true}},
             "Cannot set both `continue_final_message` and `add_generation_prompt`", "", true);
  // chat_template (or chat_template_kwargs.chat_template) is kept and flagged for the handler,
  // which refuses it unless --trust-request-chat-template; a non-string is a 400 here.
  const ChatRequest own =
      parse_chat_request({{"messages", user}, {"chat_template", "{{ x }}"}}, {});
  EXPECT_EQ(own.chat_template, "{{ x }}");
  EXPECT_TRUE(own.passes_chat_template);
  EXPECT_TRUE(parse_chat_request(
                  {{"messages", user}, {"chat_template_kwargs", {{"chat_template", "t"}}}}, {})
                  .passes_chat_template);
  EXPECT_FALSE(parse_chat_request(
                   {{"messages", user}, {"chat_template_kwargs", {{"chat_template", nullptr}}}}, {})
                   .passes_chat_template);
  EXPECT_FALSE(parse_chat_request({{"messages", user}}, {}).passes_chat_template);
  expect_400({{"messages", user}, {"chat_template", 5}}, "chat_template", "chat_template", true);
  // --reasoning-effort-map rewrites the effort the template sees (and enable_thinking follows
  // the rewritten one); efforts it does not list pass unchanged.
  GenerationDefaults mapped;
  mapped.reasoning_effort_map = {{"medium", "low"}, {"low", "none"}};
  const auto effort_kwargs = [&](const std::string& effort) {
    return parse_chat_request({{"messages", user}, {"reasoning_effort", effort}}, mapped)
        .chat_template_kwargs;
  };
  EXPECT_EQ(effort_kwargs("medium"),
            json({{"reasoning_effort", "low"}, {"enable_thinking", true}}));
  EXPECT_EQ(effort_kwargs("low"), json({{"reasoning_effort", "none"}, {"enable_thinking", false}}));
  EXPECT_EQ(effort_kwargs("high"), json({{"reasoning_effort", "high"}, {"enable_thinking", true}}));
  const json parts = {{"role", "user"},
                      {"content", json::array({{{"type", "text"}, {"text", "a"}},
                                               {{"type", "text"}, {"text", "b"}}})}};
  // tool_choice: vLLM's default is "auto" with tools, "none" without; "required" and named
  // tools (one of the tools) are structured outputs (output_constraint.h).
  const json tools = json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}});
  EXPECT_EQ(parse_chat_request({{"messages", user}}, {}).tool_choice, "none");
  EXPECT_EQ(parse_chat_request({{"messages", user}, {"tools", tools}}, {}).tool_choice, "auto");
  EXPECT_EQ(parse_chat_request({{"messages", user}, {"tools", tools}, {"tool_choice", "none"}}, {})
                .tool_choice,
            "none");
  expect_400({{"messages", user}, {"tool_choice", "auto"}},
             "When using `tool_choice`, `tools` must be set.", "tool_choice", true);
  EXPECT_EQ(
      parse_chat_request({{"messages", user}, {"tools", tools}, {"tool_choice", "required"}}, {})
          .tool_choice,
      "required");
  const ChatRequest named =
      parse_chat_request({{"messages", user},
                          {"tools", tools},
                          {"tool_choice", {{"type", "function"}, {"function", {{"name", "f"}}}}}},
                         {});
  EXPECT_EQ(named.tool_choice, "named");
  EXPECT_EQ(named.tool_choice_name, "f");
  expect_400({{"messages", user},
              {"tools", tools},
              {"tool_choice", {{"type", "function"}, {"function", {{"name", "g"}}}}}},
             "does not match any of the specified `tools`", "tool_choice", true);
  expect_400({{"messages", user}, {"tools", tools}, {"tool_choice", {{"type", "function"}}}},
             "Invalid value for `function`", "tool_choice.function", true);
  expect_400({{"messages", user}, {"tools", tools}, {"tool_choice", "sometimes"}},
             "Only named tools, \"none\", \"auto\" or \"required\" are supported.", "tool_choice",
             true);
  EXPECT_EQ(message_text(parts, 0), "a\nb");
  EXPECT_EQ(message_text({{"role", "assistant"}, {"content", nullptr}}, 0), "");
}

TEST(OpenAiProtocol, TruncatePromptTokensKeepsOneSide) {
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6};
  const auto cut = [&](std::optional<int64_t> limit, const std::string& side, int64_t max_len) {
    std::vector<int32_t> p = prompt;
    truncate_prompt(p, limit, side, max_len);
    return p;
  };
  EXPECT_EQ(cut(std::nullopt, "right", 512), prompt);
  EXPECT_EQ(cut(4, "right", 512), (std::vector<int32_t>{1, 2, 3, 4}));
  EXPECT_EQ(cut(4, "left", 512), (std::vector<int32_t>{3, 4, 5, 6}));
  EXPECT_EQ(cut(9, "left", 512), prompt);
  EXPECT_EQ(cut(-1, "left", 4), (std::vector<int32_t>{4, 5, 6}));  // max_model_len - 1
  EXPECT_EQ(cut(0, "right", 512), std::vector<int32_t>{});
  std::vector<int32_t> p = prompt;
  EXPECT_THROW(truncate_prompt(p, 600, "left", 512), ApiError);
  expect_400({{"prompt", "x"}, {"truncate_prompt_tokens", -2}},
             "greater than or equal to -1, got -2", "truncate_prompt_tokens");
  expect_400({{"prompt", "x"}, {"truncation_side", "middle"}},
             "`truncation_side` must be either 'left' or 'right'.", "truncation_side");
}

// bad_words as vLLM tokenizes them, on a byte tokenizer (one token per byte): leading
// whitespace is stripped; the spaced form is kept only when it is as long as the bare one,
// which one byte more never is; repeats are dropped; a word of whitespace alone is refused.
TEST(OpenAiProtocol, BadWordsAreTokenizedAsVllmDoes) {
  const tokenizer::ByteTokenizer bytes(512);
  const CompletionRequest r =
      parse_completion_request({{"prompt", "x"}, {"bad_words", {"ab", "  b", "ab"}}}, {});
  EXPECT_EQ(r.bad_words, (std::vector<std::string>{"ab", "  b"}));
  EXPECT_EQ(bad_words_token_ids(r.bad_words, bytes),
            (std::vector<std::vector<int32_t>>{{'a', 'b'}, {'b'}}));
  try {
    bad_words_token_ids({"ok", " \t"}, bytes);
    ADD_FAILURE() << "a whitespace word was taken";
  } catch (const ApiError& e) {
    EXPECT_NE(std::string(e.what()).find("must tokenize to at least one token"), std::string::npos);
  }
  expect_400({{"prompt", "x"}, {"bad_words", {"a", ""}}},
             "bad_words cannot contain an empty string", "bad_words");
  expect_400({{"prompt", "x"}, {"bad_words", "ab"}}, "valid list", "bad_words");
}

TEST(OpenAiProtocol, MaxTokensFollowTheContextLength) {
  EXPECT_EQ(resolve_max_tokens(16, 10, 512, "max_tokens"), 16);
  EXPECT_EQ(resolve_max_tokens(std::nullopt, 10, 512, "max_tokens"), 502);  // what is left
  EXPECT_EQ(resolve_max_tokens(16, 496, 512, "max_tokens"), 16);
  const auto message = [](auto f) {
    try {
      f();
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      return std::string(e.what()) + " | " + e.param().value_or("");
    }
    return std::string("no error");
  };
  // vLLM 0.34 clamps max_tokens to what the context leaves.
  EXPECT_EQ(resolve_max_tokens(16, 497, 512, "max_tokens"), 15);
  EXPECT_EQ(resolve_max_tokens(16, 511, 512, "max_tokens"), 1);
  EXPECT_EQ(message([] { resolve_max_tokens(16, 513, 512, "max_tokens"); }),
            "This model's maximum context length is 512 tokens. However, your prompt contains "
            "513 input tokens, which exceeds this limit even without any output tokens. Please "
            "reduce the length of the input prompt. | input_tokens");
  EXPECT_NE(message([] {
              resolve_max_tokens(600, 5, 512, "max_completion_tokens");
            }).find("max_completion_tokens=600 cannot be greater than max_model_len=512"),
            std::string::npos);
  EXPECT_NE(message([] {
              resolve_max_tokens(std::nullopt, 512, 512, "max_tokens");
            }).find("leaves no room"),
            std::string::npos);
}

}  // namespace
}  // namespace ctxpar::server
