// GenerationResponder: the JSON an OpenAI endpoint answers for one generation request, from
// the choices' deltas (generation.h): the whole response, or its stream of SSE chunks (vLLM's
// chunk shapes; chat streams open with a role chunk per choice; include_usage adds a final
// usage chunk; an engine failure becomes an error event; with a reasoning or tool call parser,
// chat text is split into reasoning, content and tool calls), or for /v1/responses the response
// object and its typed events (responses_output.h), for /v1/messages the Anthropic message and
// its events (anthropic_output.h). Used by one HTTP worker at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ctxpar/server/anthropic_output.h"
#include "ctxpar/server/generation.h"
#include "ctxpar/server/openai_protocol.h"
#include "ctxpar/server/openai_responses.h"
#include "ctxpar/server/reasoning_parser.h"
#include "ctxpar/server/responses_output.h"
#include "ctxpar/server/responses_request.h"
#include "ctxpar/server/tool_call_parser.h"
#include "ctxpar/server/tool_choice_output.h"
#include "ctxpar/tokenizer/tokenizer.h"

namespace ctxpar::server {

// kResponses and kMessages run as a chat request (one choice) and answer in the Responses API's
// and the Anthropic Messages API's shapes.
enum class Endpoint { kCompletion, kChat, kResponses, kMessages };

// What one HTTP request asks of the engine, after tokenization and the length checks.
struct GenerationPlan {
  Endpoint endpoint = Endpoint::kCompletion;
  std::string id;  // "cmpl-...", "chatcmpl-..." (chat, messages) or "resp_..."
  int64_t created = 0;
  std::string model;
  std::vector<std::vector<int32_t>> prompts;
  // Per prompt: the text to echo first (completions, echo); chat: the last message's content
  // when echo asks for it and it has the reply's role (one entry), else none.
  std::vector<std::string> echo;
  // Completions, echo with max_tokens 0 (vLLM's): the prompt alone is the text and logprobs;
  // the one token the engine still generates is left out of them.
  bool echo_only = false;
  // --enable-prompt-tokens-details: usage.prompt_tokens_details.cached_tokens counts the prompt
  // tokens the prefix cache served (each prompt's first choice), else it is null.
  bool prompt_tokens_details = false;
  // Prompt tokens of one prefix-cache block (0: prefix caching off). vLLM's
  // created_cache_tokens: the prompt's full blocks the request wrote to the cache, in tokens.
  int64_t cache_block_tokens = 0;
  std::vector<ChoiceRequest> choices;  // prompt-major: choice k of prompt p is p·n + k
  int32_t num_top_logprobs = -1;       // -1: no logprobs
  bool logprobs_as_token_ids = false;  // logprobs name tokens "token_id:<id>" (LogprobTokenNames)
  std::string response_role = "assistant";  // chat: the role of the reply's message
  // --enable-per-request-metrics: a response of one choice reports its timing (metrics).
  bool per_request_metrics = false;
  // Chat, return_prompt_text: the rendered prompt, on the whole response and the role chunks.
  std::optional<std::string> prompt_text;
  // Chat and completions: on the whole response, and on a stream's last chunk (vLLM's: each
  // choice's finishing chunk, or the usage chunk when there is one). nullopt: null.
  std::optional<std::string> system_fingerprint;
  int64_t prompt_tokens = 0;
  // Chat: --reasoning-parser, and chat_template_kwargs' thinking switch (reasoning_parser.h).
  ReasoningParser reasoning_parser = ReasoningParser::kNone;
  bool thinking = false;
  // Chat: the parser of tool calls out of the content (tool_call_parser.h; tool_choice "auto"
  // with tools; kNone: no parsing), and the request's tools, whose schemas type the arguments.
  ToolCallParser tool_call_parser = ToolCallParser::kNone;
  nlohmann::json tools;
  // Chat: tool_choice "required" or a named tool (the output is held to JSON and becomes tool
  // calls, tool_choice_output.h); they replace the tool call parser.
  ForcedToolChoice forced_tools = ForcedToolChoice::kNone;
  std::string forced_tool_name;
  // Chat: parallel_tool_calls false keeps only the first call (index 0), whole and streamed.
  bool parallel_tool_calls = true;
  // kResponses: the request, for what the response object repeats and how items are kept.
  std::shared_ptr<const ResponsesRequest> responses;
};

class GenerationResponder {
 public:
  // `plan`, `request` and `tokenizer` outlive the responder.
  GenerationResponder(const GenerationPlan& plan, const SamplingRequest& request,
                      const tokenizer::Tokenizer& tokenizer);

  // Folds deltas into the choices; returns the stream events they make when streaming.
  std::string add(const std::vector<ChoiceDelta>& deltas, bool streaming);
  // Chat: the role chunk of every choice; responses: response.created and .in_progress. Once.
  std::string first_events();
  // The usage chunk (include_usage) or the error, and [DONE]; responses: the open item's end and
  // response.completed (.incomplete when cut by max_output_tokens), or an error event.
  std::string final_events();
  nlohmann::json whole_response() const;
  // The engine failed: why (the response is then a 500 or a stream error event).
  const std::optional<std::string>& error() const { return error_; }
  int64_t completion_tokens() const;

 private:
  // Everything a choice produced so far.
  struct ChoiceState {
    std::string text;
    std::vector<int32_t> token_ids;
    std::vector<engine::SampledLogprobs> logprobs;
    std::vector<engine::SampledLogprobs> prompt_logprobs;  // prompt tokens 1.. scored
    // Streams: where the next logprobs' text_offset starts (vLLM advances it by the token
    // texts reported, echoed prompt included).
    int64_t logprob_offset = 0;
    int64_t num_cached_tokens = 0;
    std::string finish_reason;
    nlohmann::json stop_reason;
    bool sent_first = false;  // streams: the choice's first chunk went out
    ReasoningSplit reasoning{ReasoningParser::kNone, false, ""};
    ToolCallStream tools;
    ForcedToolStream forced;
    // Responses: the stream's items, and the output tokens that were reasoning (counted on a
    // split of its own, so whole responses count them too).
    ResponsesEventStream events;
    ReasoningSplit reasoning_count{ReasoningParser::kNone, false, ""};
    int64_t reasoning_tokens = 0;
    bool reasoning_ended = false;        // the split gave content
    AnthropicEventStream anthropic;      // messages: the stream's blocks
    std::optional<ChoiceTiming> timing;  // once it ended
  };
  // A choice's whole chat message: split, tool calls parsed, and the finish reason they imply.
  struct WholeMessage {
    std::optional<std::string> reasoning, content;
    bool has_reasoning = false;  // the message has a reasoning field (a reasoning parser)
    std::vector<ToolCall> calls;
    std::string finish_reason;
  };
  WholeMessage whole_message(const ChoiceState& s) const;
  bool chat_like() const { return plan_.endpoint != Endpoint::kCompletion; }
  LogprobTokenNames logprob_names() const { return {tokenizer_, plan_.logprobs_as_token_ids}; }
  // vLLM's PerRequestMetrics of a response of one choice (null otherwise, or without the
  // flag); `drop_nulls` for the stream's usage chunk (exclude_none).
  nlohmann::json request_metrics(bool drop_nulls) const;
  nlohmann::json fingerprint_or_null() const {
    return plan_.system_fingerprint ? nlohmann::json(*plan_.system_fingerprint) : nullptr;
  }
  // Responses: folds one delta in (reasoning tokens counted); streaming, returns its events.
  std::string add_responses(ChoiceState& s, const ChoiceDelta& d, bool streaming);
  // The finish reason a chat response reports (vLLM 0.34's resolve_finish_reason): "tool_calls"
  // when calls were made and the model stopped ("stop"), unless a named tool was forced; a
  // "length" cut stays "length", so a truncated call shows.
  std::string chat_finish_reason(const std::string& finish_reason, bool calls_made) const;
  // Messages: the usage of the whole generation (cache reads under --enable-prompt-tokens-details).
  nlohmann::ordered_json anthropic_usage_now() const;
  // Responses: the event with the next sequence_number, as SSE.
  std::string responses_event(nlohmann::json event);
  // Responses: the sampling fields the response object repeats, as the request resolved them.
  nlohmann::json responses_sampling() const;
  // Responses: the response object with `output`; usage only once the generation ended.
  nlohmann::json responses_response(const std::string& status, nlohmann::json output,
                                    bool with_usage) const;
  // A chat chunk's delta for the next text: content, or reasoning / content / tool_calls when
  // a parser splits it; nullopt when the split leaves nothing to send.
  std::optional<nlohmann::json> chat_delta(ChoiceState& s, const std::string& text, bool finished);
  nlohmann::json chunk_base() const;
  nlohmann::json usage() const;  // of the whole request, prompt_tokens_details included
  // Prompt tokens the prefix cache served and those the request wrote to it, summed over the
  // prompts (each prompt's first choice).
  std::pair<int64_t, int64_t> cache_tokens() const;
  nlohmann::json stream_choice(size_t i, const ChoiceDelta& d, const nlohmann::json& delta);
  // The logprobs of a choice's tokens: with `echo_prompt` (completions, echo), the prompt's
  // first, scored by its prompt logprobs from its second token on.
  nlohmann::json choice_logprobs(const ChoiceState& s, const std::vector<int32_t>& tokens,
                                 const std::vector<engine::SampledLogprobs>& logprobs,
                                 int64_t text_offset, bool echo_prompt) const;
  // The choice's prompt_logprobs field: null unless its request asked for them.
  nlohmann::json prompt_logprobs_field(size_t i) const;

  const GenerationPlan& plan_;
  const SamplingRequest& request_;
  const tokenizer::Tokenizer& tokenizer_;
  std::vector<ChoiceState> states_;
  std::optional<std::string> error_;
  bool sent_roles_ = false;
  int64_t sequence_number_ = 0;  // responses: the next event's
};

}  // namespace ctxpar::server
