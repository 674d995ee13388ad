// The request bodies of POST /v1/completions and /v1/chat/completions, parsed and checked as
// vLLM's pydantic models do (vllm/entrypoints/openai/{completion,chat_completion}/protocol.py):
// unknown fields are ignored, null means "not given", a field of the wrong type or out of range
// is a 400 ApiError naming it (param) and the rule. Fields ctxpar does not implement are
// accepted only at their defaults; any other value is a 400 saying so.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ctxpar/engine/sampling_params.h"
#include "ctxpar/server/output_text.h"
#include "ctxpar/tokenizer/tokenizer.h"

namespace ctxpar::server {

// Defaults a request falls back on before the OpenAI ones (generation_config.json, as vLLM's
// --generation-config auto).
struct GenerationDefaults {
  std::optional<float> temperature, top_p, min_p, repetition_penalty;
  std::optional<int32_t> top_k;
  std::optional<int64_t> max_tokens;  // max_new_tokens: a cap on every request (vLLM's)
  // --default-chat-template-kwargs: under every chat request's chat_template_kwargs (vLLM's
  // merge: the request's keys win, except those it sets to null or "auto").
  nlohmann::json chat_template_kwargs = nlohmann::json::object();
  // --reasoning-effort-map: a request's reasoning_effort (chat, Responses, Messages) as the
  // template gets it; efforts not listed pass unchanged (vLLM's map_reasoning_effort).
  std::map<std::string, std::string> reasoning_effort_map;
};

// What both endpoints take.
struct SamplingRequest {
  std::optional<std::string> model;
  // max_tokens is set per prompt (GenerationPlan). logprobs and prompt_logprobs are as given:
  // -1 (the whole vocabulary) is resolved by the handler, which knows the vocabulary.
  engine::SamplingParams params;
  std::optional<int64_t> max_tokens;  // as given (completions default 16, chat none)
  int32_t n = 1;
  StopStrings stop;
  bool skip_special_tokens = true;
  std::optional<bool> add_special_tokens;  // unset: the endpoint's default
  bool stream = false;
  bool include_usage = false;           // stream_options.include_usage
  bool continuous_usage_stats = false;  // stream_options.continuous_usage_stats
  bool return_token_ids = false;
  // Logprobs name tokens "token_id:<id>"; unset: --return-tokens-as-token-ids decides.
  std::optional<bool> return_tokens_as_token_ids;
  bool echo = false;
  // vLLM's truncate_prompt_tokens (>= -1) and truncation_side ("left" | "right"; unset: the
  // tokenizer's, tokenizer_config.json truncation_side, "right" by default).
  std::optional<int64_t> truncate_prompt_tokens;
  std::optional<std::string> truncation_side;
  // vLLM's bad_words, without repeats; the handler tokenizes them (bad_words_token_ids).
  std::vector<std::string> bad_words;
  // vLLM's thinking_token_budget (>= 0; -1 reads as unset); the handler adds the reasoning
  // parser's markers (SamplingParams::ThinkingBudget).
  std::optional<int64_t> thinking_token_budget;
};

// A prompt as given: text, or token ids.
using Prompt = std::variant<std::string, std::vector<int32_t>>;

struct CompletionRequest : SamplingRequest {
  std::vector<Prompt> prompts;      // one or more, none empty
  std::optional<int32_t> logprobs;  // -1: the whole vocabulary
};

struct ChatRequest : SamplingRequest {
  nlohmann::json messages;  // a non-empty array of {role: string, content: string | parts | null}
  bool add_generation_prompt = true;
  bool continue_final_message = false;
  bool logprobs = false;
  std::optional<int32_t> top_logprobs;  // -1: the whole vocabulary
  nlohmann::json tools;                 // null or an array, for the template
  // "none", "auto" (vLLM's default when tools are given), "required", or "named" for
  // {"type": "function", "function": {"name": tool_choice_name}} (one of the tools).
  std::string tool_choice = "none";
  std::string tool_choice_name;
  // false: only the first tool call is kept (vLLM's maybe_filter_parallel_tool_calls).
  bool parallel_tool_calls = true;
  nlohmann::json chat_template_kwargs;  // null or an object
  // vLLM's chat_template: Jinja text that replaces the model's template for this request.
  std::optional<std::string> chat_template;
  // The request gave chat_template or chat_template_kwargs.chat_template: refused unless
  // --trust-request-chat-template (vLLM's validate_chat_template).
  bool passes_chat_template = false;
  bool return_prompt_text = false;  // the response repeats the rendered prompt (prompt_text)
};

// Throw ApiError (400) for anything vLLM would refuse.
CompletionRequest parse_completion_request(const nlohmann::json& body,
                                           const GenerationDefaults& defaults);
ChatRequest parse_chat_request(const nlohmann::json& body, const GenerationDefaults& defaults);

// The text of a chat message's content: a string, null (""), or a list of {"type": "text",
// "text": ...} parts joined with "\n" (as vLLM's "string" content format). Throws ApiError for
// anything else.
std::string message_text(const nlohmann::json& message, size_t index);

// max_tokens for one prompt of `prompt_len` tokens under vLLM's rules (renderers/params.py and
// serve/utils/api_utils.py get_max_tokens, vLLM 0.34): a request for more than max_model_len, or
// a prompt that leaves no room for output, is a 400 naming the numbers; otherwise the requested
// value (none: what the context leaves) capped by the context left.
int64_t resolve_max_tokens(std::optional<int64_t> requested, int64_t prompt_len,
                           int64_t max_model_len, const char* max_tokens_param);

// vLLM's update_from_tokenizer for bad_words: each word (leading whitespace stripped) encoded
// without special tokens, and again after a space when that gives another first token and the
// same length. A word that encodes to nothing is a 400.
std::vector<std::vector<int32_t>> bad_words_token_ids(const std::vector<std::string>& words,
                                                      const tokenizer::Tokenizer& tokenizer);

// vLLM's truncate_prompt_tokens: `prompt` cut to its first (side "right") or last ("left")
// `limit` tokens; -1 means max_model_len - 1 (room for one output token), unset or a limit at
// least the prompt's length leaves it. A limit over max_model_len is a 400.
void truncate_prompt(std::vector<int32_t>& prompt, std::optional<int64_t> limit,
                     const std::string& side, int64_t max_model_len);

}  // namespace ctxpar::server
