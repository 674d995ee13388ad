// The request body of POST /v1/responses (the OpenAI Responses API), as vLLM's ResponsesRequest
// reads it without a response store (VLLM_ENABLE_RESPONSES_API_STORE unset, its default): the
// instructions and input items become chat messages, function tools and tool_choice their chat
// forms, text.format a response_format, and the sampling fields carry over. The server then
// runs it as the chat request it renders to. Built-in tools (web_search, file_search, ...) are
// dropped, as vLLM drops them without a tool server. Throws ApiError: 400 for what vLLM refuses
// or ctxpar does not implement (images, files, background mode), 404 for a
// previous_response_id (nothing is stored, so no id is found).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

namespace ctxpar::server {

// How the model's function calls map back to the request's tools (vLLM's shims): a `custom`
// tool is shown as a function of one string parameter "input", and its call becomes a
// custom_tool_call with that string; a `namespace` tool's functions are shown as
// "<namespace>__<name>", and their calls carry the namespace and the plain name.
struct ResponsesToolNames {
  std::set<std::string> custom;
  std::map<std::string, std::pair<std::string, std::string>> namespaced;  // flat: {ns, name}
};

struct ResponsesRequest {
  // A /v1/chat/completions body: messages, tools, tool_choice, response_format, max_tokens
  // (max_output_tokens), logprobs / top_logprobs and the sampling fields, stream.
  nlohmann::ordered_json chat;
  // The request fields the response object repeats (instructions, metadata, tools, tool_choice,
  // text, reasoning, truncation, ...), as given or at their defaults.
  nlohmann::json echo;
  ResponsesToolNames tool_names;
  bool include_reasoning = true;    // vLLM's include_reasoning: false drops reasoning items
  bool parallel_tool_calls = true;  // false: only the first tool call is kept
  bool output_logprobs = false;     // include has "message.output_text.logprobs"
};

ResponsesRequest parse_responses_request(const nlohmann::ordered_json& body);

}  // namespace ctxpar::server
