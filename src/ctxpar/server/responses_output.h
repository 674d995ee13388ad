// The JSON of /v1/responses answers, as vLLM's simple (non-harmony) path writes it: the output
// items of a whole response (responses/utils.py build_response_output_items), the typed events
// of a stream (streaming_events.py SimpleStreamingEventProcessor), and the response object
// (ResponsesResponse.from_request). Item ids are "msg_", "rs_" and "fc_" + 32 hex digits.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ctxpar/server/responses_request.h"
#include "ctxpar/server/tool_call_parser.h"

namespace ctxpar::server {

// A finished generation's status: "incomplete" when max_output_tokens cut it ("length"),
// else "completed".
std::string responses_status(const std::string& finish_reason);

// What one chat choice became, split as a chat message is.
struct ResponsesMessage {
  std::optional<std::string> reasoning, content;
  std::vector<ToolCall> calls;
  // output_text logprobs: [{token, logprob, bytes, top_logprobs}] (chat's content entries),
  // or null when not asked for.
  nlohmann::json logprobs;
  std::string finish_reason;
  // A reasoning or tool call parser (or a forced tool choice) split the text. Without one the
  // output is a single message item, empty when there is no text (vLLM's fallback).
  bool parsed = false;
};
// Calls become function_call items, or custom_tool_call items for the request's custom tools
// (`tools`).
nlohmann::json responses_output_items(const ResponsesMessage& message,
                                      const ResponsesToolNames& tools);

// The input a custom tool's call carries: the "input" string of the shim's arguments, or the
// arguments as written when they are not such an object (vLLM's decode_custom_tool_input).
std::string custom_tool_input(const std::string& arguments);
// The part of that input arguments still being written already decode to: the "input" string
// up to its last whole character or escape ("" until it starts, or when "input" is not the
// first key; the stream then sends the input whole at the end).
std::string custom_tool_input_prefix(std::string_view arguments);

// The stream of one generation: each chat-shaped delta becomes the events of the item it
// belongs to (a reasoning item, a message, a function call), opening and closing items as the
// kind changes. Events come without sequence_number (the caller numbers all of a stream's).
class ResponsesEventStream {
 public:
  // parallel_tool_calls false: tool calls after the first are dropped, as vLLM's filter does.
  // `tools` (may be null: none) outlives the stream.
  explicit ResponsesEventStream(bool parallel_tool_calls = true,
                                const ResponsesToolNames* tools = nullptr)
      : parallel_tool_calls_(parallel_tool_calls), tools_(tools) {}

  // `delta`: {"reasoning"?, "content"?, "tool_calls"?: [{index, id?, function: {name?,
  // arguments?}}]} (a chat stream delta); `logprobs`: the stream form of the content's
  // logprobs ([{token, logprob, top_logprobs: [{token, logprob}]}]).
  std::vector<nlohmann::json> add(const nlohmann::json& delta, const nlohmann::json& logprobs);
  // Closes the open item with `status` ("completed" or "incomplete").
  std::vector<nlohmann::json> close(const std::string& status);
  // The items done so far, in output order.
  const nlohmann::json& items() const { return items_; }

 private:
  enum class Kind { kNone, kReasoning, kContent, kToolCall };
  std::vector<nlohmann::json> open(Kind kind, const nlohmann::json& call);
  void text_delta(Kind kind, const std::string& text, const nlohmann::json& logprobs,
                  std::vector<nlohmann::json>& out);

  // A custom tool's call: the events that bring its streamed input up to `input`.
  void custom_input_delta(const std::string& input, std::vector<nlohmann::json>& out);

  bool parallel_tool_calls_;
  const ResponsesToolNames* tools_;
  Kind kind_ = Kind::kNone;
  int output_index_ = 0;
  std::string item_id_;
  std::string text_;                   // the open item's text or arguments so far
  nlohmann::json logprobs_ = nullptr;  // the open message's logprobs (whole form), or null
  int call_index_ = -1;                // the open call's chat index
  std::string call_id_, call_name_;    // call_name_: as the model wrote it (flat)
  bool call_custom_ = false;
  std::string custom_input_;  // a custom call's input streamed so far
  nlohmann::json items_ = nlohmann::json::array();
};

// The stream form of whole-form logprobs: bytes dropped.
nlohmann::json responses_stream_logprobs(const nlohmann::json& logprobs);

// The response object. `sampling`: temperature, top_p, max_output_tokens, top_logprobs,
// presence_penalty and frequency_penalty as the request resolved them; `usage` null while in
// progress.
nlohmann::json responses_object(const ResponsesRequest& request, const std::string& id,
                                int64_t created_at, const std::string& model,
                                const std::string& status, nlohmann::json output,
                                const nlohmann::json& sampling, nlohmann::json usage);

// vLLM's ResponseUsage for one turn.
nlohmann::json responses_usage(int64_t input_tokens, int64_t cached_tokens, int64_t output_tokens,
                               int64_t reasoning_tokens);

// A Responses stream event: "event: <type>\ndata: <json>\n\n".
std::string responses_sse_event(const nlohmann::json& event);

}  // namespace ctxpar::server
