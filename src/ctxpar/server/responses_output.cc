#include "ctxpar/server/responses_output.h"

#include <utility>

#include "ctxpar/server/openai_responses.h"
#include "ctxpar/tokenizer/chat_template/python_text.h"

namespace ctxpar::server {

using nlohmann::json;

namespace {

std::string item_id(const char* prefix) {
  return prefix + random_hex(32);
}

json output_text_part(const std::string& text, json logprobs) {
  return {{"annotations", json::array()},
          {"text", text},
          {"type", "output_text"},
          {"logprobs", std::move(logprobs)}};
}

json message_item(const std::string& id, json content, const std::string& status) {
  return {{"id", id},
          {"content", std::move(content)},
          {"role", "assistant"},
          {"status", status},
          {"type", "message"}};
}

json reasoning_part(const std::string& text) {
  return {{"text", text}, {"type", "reasoning_text"}};
}

json reasoning_item(const std::string& id, json content, json status) {
  return {{"id", id},
          {"summary", json::array()},
          {"type", "reasoning"},
          {"content", std::move(content)},
          {"encrypted_content", nullptr},
          {"status", std::move(status)}};
}

bool is_custom(const ResponsesToolNames* tools, const std::string& name) {
  return tools != nullptr && tools->custom.count(name) > 0;
}

// A call's name without its namespace, and the namespace (null: none).
std::pair<std::string, json> split_name(const ResponsesToolNames* tools, const std::string& name) {
  if (tools != nullptr) {
    if (const auto it = tools->namespaced.find(name); it != tools->namespaced.end())
      return {it->second.second, it->second.first};
  }
  return {name, nullptr};
}

// The item of the model's call `name` (flat, as written) with `arguments`.
json call_item(const ResponsesToolNames* tools, const std::string& id, const std::string& call_id,
               const std::string& name, const std::string& arguments, const std::string& status) {
  if (is_custom(tools, name)) {
    return {{"type", "custom_tool_call"},
            {"id", id},
            {"call_id", call_id},
            {"name", name},
            {"input", custom_tool_input(arguments)}};
  }
  auto [plain, ns] = split_name(tools, name);
  return {{"arguments", arguments},  {"call_id", call_id}, {"name", plain},
          {"type", "function_call"}, {"id", id},           {"status", status},
          {"namespace", ns}};
}

}  // namespace

std::string responses_status(const std::string& finish_reason) {
  return finish_reason == "length" ? "incomplete" : "completed";
}

std::string custom_tool_input(const std::string& arguments) {
  const json parsed = json::parse(arguments, nullptr, false);
  if (parsed.is_object() && parsed.contains("input") && parsed["input"].is_string())
    return parsed["input"].get<std::string>();
  return arguments;
}

std::string custom_tool_input_prefix(std::string_view a) {
  size_t i = 0;
  const auto expect = [&](std::string_view token) {
    while (i < a.size() && (a[i] == ' ' || a[i] == '\n' || a[i] == '\r' || a[i] == '\t')) ++i;
    if (a.substr(i, token.size()) != token) return false;
    i += token.size();
    return true;
  };
  if (!expect("{") || !expect("\"input\"") || !expect(":") || !expect("\"")) return "";
  // \uXXXX at `at`, or -1 when it is not (yet) there.
  const auto hex4 = [&](size_t at) -> int {
    if (at + 6 > a.size() || a[at] != '\\' || a[at + 1] != 'u') return -1;
    int v = 0;
    for (size_t k = at + 2; k < at + 6; ++k) {
      const char c = a[k];
      const int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    return v;
  };
  // The string's characters; stops before an escape not whole yet (or not valid).
  static constexpr std::string_view kEscapes = "\"\\/bfnrt";
  static constexpr std::string_view kMeanings = "\"\\/\b\f\n\r\t";
  std::string out;
  while (i < a.size() && a[i] != '"') {
    if (a[i] != '\\') {
      out += a[i++];
      continue;
    }
    if (i + 1 >= a.size()) break;
    if (const size_t e = kEscapes.find(a[i + 1]); e != std::string_view::npos) {
      out += kMeanings[e];
      i += 2;
      continue;
    }
    int cp = hex4(i);
    if (cp < 0 || (cp >= 0xDC00 && cp <= 0xDFFF)) break;
    size_t used = 6;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      const int low = hex4(i + 6);
      if (low < 0xDC00 || low > 0xDFFF) break;  // the pair is not whole yet (or is broken)
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
      used = 12;
    }
    chat_template::append_utf8(out, static_cast<char32_t>(cp));
    i += used;
  }
  return out;
}

json responses_output_items(const ResponsesMessage& m, const ResponsesToolNames& tools) {
  const std::string last_status = responses_status(m.finish_reason);
  json items = json::array();
  if (!m.parsed) {
    const std::string text = m.content.value_or("");
    json content = json::array();
    if (!text.empty()) content.push_back(output_text_part(text, m.logprobs));
    items.push_back(message_item(item_id("msg_"), std::move(content), last_status));
    return items;
  }
  if (m.reasoning && !m.reasoning->empty()) {
    items.push_back(
        reasoning_item(item_id("rs_"), json::array({reasoning_part(*m.reasoning)}), nullptr));
  }
  if (m.content && !m.content->empty()) {
    items.push_back(message_item(item_id("msg_"),
                                 json::array({output_text_part(*m.content, m.logprobs)}),
                                 m.calls.empty() ? last_status : "completed"));
  }
  for (size_t i = 0; i < m.calls.size(); ++i) {
    const ToolCall& call = m.calls[i];
    items.push_back(call_item(&tools, item_id(is_custom(&tools, call.name) ? "ctc_" : "fc_"),
                              call.id, call.name, call.arguments,
                              i + 1 == m.calls.size() ? last_status : "completed"));
  }
  return items;
}

json responses_stream_logprobs(const json& logprobs) {
  json out = json::array();
  if (!logprobs.is_array()) return out;
  for (const json& lp : logprobs) {
    json top = json::array();
    for (const json& t : lp["top_logprobs"])
      top.push_back({{"token", t["token"]}, {"logprob", t["logprob"]}});
    out.push_back({{"token", lp["token"]}, {"logprob", lp["logprob"]}, {"top_logprobs", top}});
  }
  return out;
}

std::vector<json> ResponsesEventStream::open(Kind kind, const json& call) {
  kind_ = kind;
  text_.clear();
  logprobs_ = nullptr;
  std::vector<json> out;
  json item;
  switch (kind) {
    case Kind::kContent:
      item_id_ = item_id("msg_");
      item = message_item(item_id_, json::array(), "in_progress");
      break;
    case Kind::kReasoning:
      item_id_ = item_id("rs_");
      item = reasoning_item(item_id_, nullptr, "in_progress");
      break;
    case Kind::kToolCall: {
      call_index_ = call.value("index", 0);
      call_id_ = call.value("id", "");
      call_name_ = call.contains("function") ? call["function"].value("name", "") : "";
      call_custom_ = is_custom(tools_, call_name_);
      custom_input_.clear();
      item_id_ = item_id(call_custom_ ? "ctc_" : "fc_");
      item = call_item(tools_, item_id_, call_id_, call_name_, "", "in_progress");
      break;
    }
    case Kind::kNone:
      return out;
  }
  out.push_back({{"type", "response.output_item.added"},
                 {"output_index", output_index_},
                 {"item", std::move(item)}});
  if (kind == Kind::kContent || kind == Kind::kReasoning) {
    const json part =
        kind == Kind::kContent ? output_text_part("", json::array()) : reasoning_part("");
    out.push_back({{"type", "response.content_part.added"},
                   {"output_index", output_index_},
                   {"item_id", item_id_},
                   {"content_index", 0},
                   {"part", part}});
  }
  return out;
}

void ResponsesEventStream::text_delta(Kind kind, const std::string& text, const json& logprobs,
                                      std::vector<json>& out) {
  if (kind_ != kind) {
    for (json& e : close("completed")) out.push_back(std::move(e));
    for (json& e : open(kind, nullptr)) out.push_back(std::move(e));
  }
  text_ += text;
  if (kind == Kind::kReasoning) {
    out.push_back({{"type", "response.reasoning_text.delta"},
                   {"item_id", item_id_},
                   {"output_index", output_index_},
                   {"content_index", 0},
                   {"delta", text}});
    return;
  }
  if (logprobs.is_array() && !logprobs.empty()) {
    if (logprobs_.is_null()) logprobs_ = json::array();
    for (const json& lp : logprobs) logprobs_.push_back(lp);
  }
  out.push_back({{"type", "response.output_text.delta"},
                 {"content_index", 0},
                 {"output_index", output_index_},
                 {"item_id", item_id_},
                 {"delta", text},
                 {"logprobs", responses_stream_logprobs(logprobs)}});
}

std::vector<json> ResponsesEventStream::add(const json& delta, const json& logprobs) {
  std::vector<json> out;
  // One event type per event: reasoning, then content, then each call (vLLM's split_delta).
  if (const auto it = delta.find("reasoning"); it != delta.end() && it->is_string()) {
    text_delta(Kind::kReasoning, it->get<std::string>(), nullptr, out);
  }
  if (const auto it = delta.find("content");
      it != delta.end() && it->is_string() && !it->get<std::string>().empty()) {
    text_delta(Kind::kContent, it->get<std::string>(), logprobs, out);
  }
  const auto calls = delta.find("tool_calls");
  if (calls == delta.end() || !calls->is_array()) return out;
  for (const json& piece : *calls) {
    const int index = piece.value("index", 0);
    if (!parallel_tool_calls_ && index > 0) continue;
    if (kind_ != Kind::kToolCall || index != call_index_) {
      for (json& e : close("completed")) out.push_back(std::move(e));
      for (json& e : open(Kind::kToolCall, piece)) out.push_back(std::move(e));
    }
    const std::string arguments =
        piece.contains("function") ? piece["function"].value("arguments", "") : "";
    if (arguments.empty()) continue;
    text_ += arguments;
    if (call_custom_) {
      custom_input_delta(custom_tool_input_prefix(text_), out);
      continue;
    }
    out.push_back({{"type", "response.function_call_arguments.delta"},
                   {"output_index", output_index_},
                   {"item_id", item_id_},
                   {"delta", arguments}});
  }
  return out;
}

std::vector<json> ResponsesEventStream::close(const std::string& status) {
  std::vector<json> out;
  json item;
  switch (kind_) {
    case Kind::kNone:
      return out;
    case Kind::kContent: {
      const json part = output_text_part(text_, logprobs_);
      out.push_back({{"type", "response.output_text.done"},
                     {"output_index", output_index_},
                     {"content_index", 0},
                     {"text", text_},
                     {"logprobs", json::array()},
                     {"item_id", item_id_}});
      out.push_back({{"type", "response.content_part.done"},
                     {"item_id", item_id_},
                     {"output_index", output_index_},
                     {"content_index", 0},
                     {"part", part}});
      item = message_item(item_id_, text_.empty() ? json::array() : json::array({part}), status);
      break;
    }
    case Kind::kReasoning: {
      const json part = reasoning_part(text_);
      out.push_back({{"type", "response.reasoning_text.done"},
                     {"item_id", item_id_},
                     {"output_index", output_index_},
                     {"content_index", 0},
                     {"text", text_}});
      out.push_back({{"type", "response.content_part.done"},
                     {"item_id", item_id_},
                     {"output_index", output_index_},
                     {"content_index", 0},
                     {"part", part}});
      item = reasoning_item(item_id_, json::array({part}), status);
      break;
    }
    case Kind::kToolCall:
      if (call_custom_) {
        const std::string input = custom_tool_input(text_);
        custom_input_delta(input, out);
        out.push_back({{"type", "response.custom_tool_call_input.done"},
                       {"output_index", output_index_},
                       {"item_id", item_id_},
                       {"input", input}});
      } else {
        out.push_back({{"type", "response.function_call_arguments.done"},
                       {"output_index", output_index_},
                       {"item_id", item_id_},
                       {"arguments", text_},
                       {"name", split_name(tools_, call_name_).first}});
      }
      item = call_item(tools_, item_id_, call_id_, call_name_, text_, status);
      break;
  }
  items_.push_back(item);
  out.push_back({{"type", "response.output_item.done"},
                 {"output_index", output_index_},
                 {"item", std::move(item)}});
  ++output_index_;
  kind_ = Kind::kNone;
  return out;
}

void ResponsesEventStream::custom_input_delta(const std::string& input, std::vector<json>& out) {
  if (input == custom_input_) return;
  // Input that does not extend what was sent cannot be taken back: it is sent again whole.
  const bool extends = input.compare(0, custom_input_.size(), custom_input_) == 0;
  out.push_back({{"type", "response.custom_tool_call_input.delta"},
                 {"output_index", output_index_},
                 {"item_id", item_id_},
                 {"delta", extends ? input.substr(custom_input_.size()) : input}});
  custom_input_ = input;
}

json responses_object(const ResponsesRequest& request, const std::string& id, int64_t created_at,
                      const std::string& model, const std::string& status, json output,
                      const json& sampling, json usage) {
  json r = request.echo;
  r["id"] = id;
  r["created_at"] = created_at;
  r["incomplete_details"] =
      status == "incomplete" ? json{{"reason", "max_output_tokens"}} : json(nullptr);
  r["model"] = model;
  r["object"] = "response";
  r["output"] = std::move(output);
  r["status"] = status;
  r["usage"] = std::move(usage);
  r["prompt_cache_options"] = nullptr;
  r["kv_transfer_params"] = nullptr;
  r["ec_transfer_params"] = nullptr;
  r["input_messages"] = nullptr;
  r["output_messages"] = nullptr;
  for (const auto& [key, value] : sampling.items()) r[key] = value;
  return r;
}

json responses_usage(int64_t input_tokens, int64_t cached_tokens, int64_t output_tokens,
                     int64_t reasoning_tokens) {
  return {{"input_tokens", input_tokens},
          {"input_tokens_details",
           {{"cached_tokens", cached_tokens},
            {"cache_write_tokens", 0},
            {"input_tokens_per_turn", json::array()},
            {"cached_tokens_per_turn", json::array()}}},
          {"output_tokens", output_tokens},
          {"output_tokens_details",
           {{"reasoning_tokens", reasoning_tokens},
            {"tool_output_tokens", 0},
            {"output_tokens_per_turn", json::array()},
            {"tool_output_tokens_per_turn", json::array()}}},
          {"total_tokens", input_tokens + output_tokens}};
}

std::string responses_sse_event(const json& event) {
  return "event: " + event.value("type", "unknown") +
         "\ndata: " + event.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

}  // namespace ctxpar::server
