#include "ctxpar/server/anthropic_output.h"

#include "ctxpar/server/api_error.h"
#include "ctxpar/server/openai_responses.h"

namespace ctxpar::server {

using nlohmann::json;
using nlohmann::ordered_json;

std::string anthropic_error_type(int status) {
  switch (status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
      return "overloaded_error";
    default:
      return status >= 500 ? "api_error" : "invalid_request_error";
  }
}

ordered_json anthropic_error(int status, const std::string& message) {
  return {{"type", "error"},
          {"error", {{"type", anthropic_error_type(status)}, {"message", message}}}};
}

ordered_json anthropic_usage(int64_t prompt_tokens, std::optional<AnthropicCache> cache,
                             int64_t output_tokens) {
  const AnthropicCache c = cache.value_or(AnthropicCache{});
  ordered_json usage = {{"input_tokens", std::max<int64_t>(0, prompt_tokens - c.read - c.created)},
                        {"output_tokens", output_tokens}};
  if (cache) {
    usage["cache_creation_input_tokens"] = c.created;
    usage["cache_read_input_tokens"] = c.read;
  }
  return usage;
}

std::pair<ordered_json, ordered_json> anthropic_stop(const std::string& finish_reason,
                                                     const json& stop_reason, bool tool_used,
                                                     bool tool_complete) {
  if (finish_reason == "length") return {"max_tokens", nullptr};
  if (finish_reason != "stop" && finish_reason != "tool_calls") return {nullptr, nullptr};
  if (tool_complete) return {"tool_use", nullptr};
  // A stop string (not a stop token id) is a stop sequence; it may have cut a call short.
  if (stop_reason.is_string()) return {"stop_sequence", stop_reason.get<std::string>()};
  if (finish_reason == "tool_calls" || tool_used) return {"tool_use", nullptr};
  return {"end_turn", nullptr};
}

ordered_json anthropic_message(const std::string& id, const std::string& model,
                               const AnthropicMessage& m, ordered_json usage) {
  ordered_json content = ordered_json::array();
  if (m.reasoning && !m.reasoning->empty()) {
    content.push_back(
        {{"type", "thinking"}, {"thinking", *m.reasoning}, {"signature", random_hex(32)}});
  }
  if (m.content && !m.content->empty()) content.push_back({{"type", "text"}, {"text", *m.content}});
  for (const ToolCall& call : m.calls) {
    ordered_json input = ordered_json::parse(call.arguments, nullptr, false);
    if (!input.is_object()) {
      throw internal_error("tool call " + call.name +
                           " has arguments that are not a JSON object: " + call.arguments);
    }
    content.push_back(
        {{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", std::move(input)}});
  }
  // Anthropic's empty completion is one empty text block: clients read content[0].
  if (content.empty()) content.push_back({{"type", "text"}, {"text", ""}});
  const auto [stop_reason, stop_sequence] =
      anthropic_stop(m.finish_reason, m.stop_reason, !m.calls.empty(), !m.calls.empty());
  ordered_json out = {{"id", id},           {"type", "message"}, {"role", "assistant"},
                      {"content", content}, {"model", model},    {"stop_reason", stop_reason}};
  // vLLM writes the whole message without its null fields.
  if (!stop_sequence.is_null()) out["stop_sequence"] = stop_sequence;
  out["usage"] = std::move(usage);
  return out;
}

std::string anthropic_sse_event(const ordered_json& event) {
  return "event: " + event["type"].get<std::string>() +
         "\ndata: " + event.dump(-1, ' ', false, ordered_json::error_handler_t::replace) + "\n\n";
}

std::string AnthropicEventStream::start(const std::string& id, const std::string& model,
                                        ordered_json usage) {
  return anthropic_sse_event({{"type", "message_start"},
                              {"message",
                               {{"id", id},
                                {"type", "message"},
                                {"role", "assistant"},
                                {"content", ordered_json::array()},
                                {"model", model},
                                {"stop_reason", nullptr},
                                {"stop_sequence", nullptr},
                                {"usage", std::move(usage)}}}});
}

std::string AnthropicEventStream::start_block(Block kind, ordered_json content_block) {
  block_ = kind;
  signature_ = kind == Block::kThinking ? random_hex(32) : std::string();
  tool_use_id_ = kind == Block::kToolUse ? content_block["id"].get<std::string>() : std::string();
  return anthropic_sse_event({{"type", "content_block_start"},
                              {"content_block", std::move(content_block)},
                              {"index", next_index_}});
}

std::string AnthropicEventStream::delta(ordered_json delta) const {
  return anthropic_sse_event(
      {{"type", "content_block_delta"}, {"delta", std::move(delta)}, {"index", next_index_}});
}

std::string AnthropicEventStream::stop_block() {
  if (block_ == Block::kNone) return {};
  std::string out;
  if (block_ == Block::kThinking)
    out += delta({{"type", "signature_delta"}, {"signature", signature_}});
  out += anthropic_sse_event({{"type", "content_block_stop"}, {"index", next_index_}});
  block_ = Block::kNone;
  tool_use_id_.clear();
  ++next_index_;
  return out;
}

std::string AnthropicEventStream::stop_and_flush() {
  std::string out = stop_block();
  if (pending_.empty()) return out;
  out += start_block(Block::kText, {{"type", "text"}, {"text", ""}});
  out += delta({{"type", "text_delta"}, {"text", pending_}});
  pending_.clear();
  return out + stop_block();
}

std::string AnthropicEventStream::add(const json& d) {
  std::string out;
  const std::string reasoning = d.value("reasoning", std::string());
  if (!reasoning.empty()) {
    if (block_ != Block::kThinking) {
      out += stop_and_flush();
      out += start_block(Block::kThinking, {{"type", "thinking"}, {"thinking", ""}});
    }
    out += delta({{"type", "thinking_delta"}, {"thinking", reasoning}});
  }
  const std::string content =
      d.contains("content") && d["content"].is_string() ? d["content"].get<std::string>() : "";
  if (!content.empty()) {
    if (block_ == Block::kToolUse) {
      pending_ += content;
    } else {
      if (block_ != Block::kText) {
        out += stop_and_flush();
        out += start_block(Block::kText, {{"type", "text"}, {"text", ""}});
      }
      out += delta({{"type", "text_delta"}, {"text", content}});
    }
  }
  if (!d.contains("tool_calls")) return out;
  for (const json& call : d["tool_calls"]) {
    const int64_t index = call.value("index", int64_t{0});
    const json function = call.value("function", json::object());
    const std::string arguments = function.value("arguments", std::string());
    std::string id;
    if (call.contains("id") && call["id"].is_string()) {
      id = call["id"].get<std::string>();
      call_ids_[index] = id;
      if (tool_use_id_ != id && function.contains("name")) {
        out += stop_and_flush();
        tool_used_ = true;
        last_arguments_.clear();
        out += start_block(Block::kToolUse, {{"type", "tool_use"},
                                             {"id", id},
                                             {"name", function["name"]},
                                             {"input", ordered_json::object()}});
      }
    } else if (const auto it = call_ids_.find(index); it != call_ids_.end()) {
      id = it->second;
    }
    // Pieces of a call whose block is no longer open are dropped, as vLLM drops them.
    if (!arguments.empty() && !id.empty() && tool_use_id_ == id) {
      last_arguments_ += arguments;
      out += delta({{"type", "input_json_delta"}, {"partial_json", arguments}});
    }
  }
  return out;
}

std::string AnthropicEventStream::finish(const std::string& finish_reason, const json& stop_reason,
                                         ordered_json usage) {
  std::string out = stop_and_flush();
  const bool complete =
      tool_used_ && json::accept(last_arguments_);  // a stop string may cut the last call
  const auto [reason, sequence] = anthropic_stop(finish_reason.empty() ? "stop" : finish_reason,
                                                 stop_reason, tool_used_, complete);
  out += anthropic_sse_event({{"type", "message_delta"},
                              {"delta", {{"stop_reason", reason}, {"stop_sequence", sequence}}},
                              {"usage", std::move(usage)}});
  return out + anthropic_sse_event({{"type", "message_stop"}});
}

std::string AnthropicEventStream::fail(const std::string& message) {
  return stop_block() +
         anthropic_sse_event(
             {{"type", "error"},
              {"error", {{"type", anthropic_error_type(500)}, {"message", message}}}});
}

}  // namespace ctxpar::server
