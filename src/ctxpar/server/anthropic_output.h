// The JSON of /v1/messages answers (the Anthropic Messages API), as vLLM's
// AnthropicServingMessages writes them from the chat completion it ran: the whole message
// (thinking, text and tool_use blocks), the typed SSE events of a stream, usage, stop reasons and
// the error body {"type": "error", "error": {"type", "message"}}.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ctxpar/server/tool_call.h"

namespace ctxpar::server {

// Anthropic's error.type for an HTTP status (invalid_request_error, not_found_error,
// overloaded_error, api_error, ...).
std::string anthropic_error_type(int status);
nlohmann::ordered_json anthropic_error(int status, const std::string& message);

// Prompt tokens the prefix cache served (read) and those the request wrote to it (created).
struct AnthropicCache {
  int64_t read = 0, created = 0;
};
// Usage as Anthropic counts it: input_tokens leaves out the prompt tokens read from and written
// to the prefix cache, which cache_read_input_tokens and cache_creation_input_tokens hold (only
// when known, i.e. under --enable-prompt-tokens-details).
nlohmann::ordered_json anthropic_usage(int64_t prompt_tokens, std::optional<AnthropicCache> cache,
                                       int64_t output_tokens);

// stop_reason and stop_sequence (null or a string each) of a chat finish: "length" is
// max_tokens; a stop string (`stop_reason` a string) is stop_sequence unless the tool calls are
// whole (`tool_complete`); a finish with tool calls is tool_use; else end_turn. Other finishes
// (abort) give null.
std::pair<nlohmann::ordered_json, nlohmann::ordered_json> anthropic_stop(
    const std::string& finish_reason, const nlohmann::json& stop_reason, bool tool_used,
    bool tool_complete);

// A whole chat message, as the chat path split it.
struct AnthropicMessage {
  std::optional<std::string> reasoning, content;
  std::vector<ToolCall> calls;
  std::string finish_reason;   // with calls: "tool_calls"
  nlohmann::json stop_reason;  // the engine's: a stop string, a token id or null
};
// The message object; a tool call's arguments become its input object (ApiError 500 when they
// are not one, as vLLM's validation fails there). No blocks at all give one empty text block.
nlohmann::ordered_json anthropic_message(const std::string& id, const std::string& model,
                                         const AnthropicMessage& message,
                                         nlohmann::ordered_json usage);

// One stream's events, from the chat deltas of its one choice: a thinking block per run of
// reasoning (closed with a signature_delta), a text block per run of content, a tool_use block
// per call (input_json_delta pieces). Content that arrives while a tool_use block is open waits
// and follows as a text block of its own once the block closes.
class AnthropicEventStream {
 public:
  // message_start, with the prompt's usage.
  std::string start(const std::string& id, const std::string& model, nlohmann::ordered_json usage);
  // `delta`: a chat stream delta {"reasoning"?, "content"?, "tool_calls"?: [{index, id?,
  // function: {name?, arguments?}}]}.
  std::string add(const nlohmann::json& delta);
  // The open block's end, message_delta (stop reason, usage) and message_stop. `finish_reason`
  // as the chat stream reports it ("tool_calls" once calls went out).
  std::string finish(const std::string& finish_reason, const nlohmann::json& stop_reason,
                     nlohmann::ordered_json usage);
  // The engine failed: the open block's end and an error event.
  std::string fail(const std::string& message);

 private:
  enum class Block { kNone, kThinking, kText, kToolUse };
  std::string start_block(Block kind, nlohmann::ordered_json content_block);
  std::string delta(nlohmann::ordered_json delta) const;
  std::string stop_block();
  std::string stop_and_flush();

  Block block_ = Block::kNone;
  int next_index_ = 0;                       // the next block's index
  std::string signature_;                    // the open thinking block's, sent as it closes
  std::string tool_use_id_;                  // the open tool_use block's call id
  std::string pending_;                      // content that came while a tool_use block was open
  std::map<int64_t, std::string> call_ids_;  // chat call index -> id
  bool tool_used_ = false;
  std::string last_arguments_;  // the last call's arguments so far
};

// "event: <type>\ndata: <json>\n\n".
std::string anthropic_sse_event(const nlohmann::ordered_json& event);

}  // namespace ctxpar::server
