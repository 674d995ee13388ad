// The request bodies of POST /v1/messages and /v1/messages/count_tokens (the Anthropic Messages
// API), as vLLM's AnthropicServingMessages reads them: each becomes the chat request vLLM
// converts it to, which the server then runs (or, for count_tokens, renders and counts).
//   system (a string or text blocks, joined without a separator; Claude Code's
//       "x-anthropic-billing-header" blocks dropped) -> the leading system message;
//   messages: text blocks -> content (one part: a string), thinking -> the assistant's
//       "reasoning", tool_use -> tool_calls (arguments as json.dumps writes the input),
//       tool_result in a user turn -> a tool message placed before that turn's other content;
//       a later system message stays where it is, or joins the leading one when the chat template
//       refuses system messages after the first (AnthropicRendering::merge_inline_system);
//   tools -> function tools (tool_addition / tool_removal blocks in system messages change the
//       list first); tool_choice auto / any / tool / none -> auto / required / named / none;
//   thinking disabled / between_tools -> reasoning_effort (AnthropicRendering), enabled ->
//       thinking_token_budget (budget_tokens); output_config's effort -> reasoning_effort and its
//       json_schema format -> response_format;
//   max_tokens, stop_sequences, temperature, top_p, top_k and stream carry over (a stream asks
//       for usage on every chunk, as vLLM's does).
// Throws ApiError 400 naming the field for what vLLM's pydantic models refuse, and for images
// and tool references, which ctxpar's text-only chat path cannot hold.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ctxpar/engine/chat_prompt.h"

namespace ctxpar::server {

// What the chat template decides for every request, found once at start-up.
struct AnthropicRendering {
  // The template refuses system messages after the first one (vLLM's probe renders
  // [system, user, system, user]): inline system messages then join the leading one.
  bool merge_inline_system = true;
  // The reasoning_effort that thinking {"type": "disabled"} and "between_tools" send.
  std::string disabled_thinking_effort = "none";
};

// vLLM's probes of `chat`. `effort_option` (--anthropic-disabled-thinking-effort): "auto" picks
// "low" when the template refuses reasoning_effort "none" or renders it as it renders some
// thinking effort, else "none"; any other value is used as given.
// The probe renders with `default_kwargs` (--default-chat-template-kwargs) under its own.
AnthropicRendering probe_anthropic_rendering(const engine::ChatPrompt& chat,
                                             const std::string& effort_option,
                                             const nlohmann::json& default_kwargs);

// The efforts --anthropic-disabled-thinking-effort takes, "auto" first.
const std::vector<std::string>& anthropic_disabled_thinking_efforts();

// The chat completions body of a /v1/messages body (`count_tokens`: of a count_tokens body,
// which has no max_tokens, stream or sampling fields).
nlohmann::ordered_json anthropic_chat_request(const nlohmann::ordered_json& body, bool count_tokens,
                                              const AnthropicRendering& rendering);

}  // namespace ctxpar::server
