#include "ctxpar/server/tool_call_parser.h"

#include <nlohmann/json.hpp>

#include "ctxpar/core/error.h"
#include "ctxpar/server/openai_responses.h"
#include "ctxpar/server/text_tags.h"

namespace ctxpar::server {
namespace {

using ordered_json = nlohmann::ordered_json;

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

// Python's json.dumps(value, ensure_ascii=False): ", " and ": " between items, keys in order.
std::string python_json(const ordered_json& v) {
  if (v.is_object()) {
    std::string out = "{";
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (it != v.begin()) out += ", ";
      out += ordered_json(it.key()).dump() + ": " + python_json(it.value());
    }
    return out + "}";
  }
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i) out += (i > 0 ? ", " : "") + python_json(v[i]);
    return out + "]";
  }
  return v.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

// A call's JSON text as vLLM reads it: an object with a string "name" and "arguments" (an
// object, or a string holding one). Empty when it is not one.
std::optional<ToolCall> parse_call(std::string_view body) {
  const ordered_json v = ordered_json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!v.is_object() || !v.contains("name") || !v["name"].is_string() || !v.contains("arguments")) {
    return std::nullopt;
  }
  ordered_json args = v["arguments"];
  if (args.is_string()) {
    args = ordered_json::parse(args.get<std::string>(), nullptr, false);
    if (args.is_discarded()) return std::nullopt;
  }
  return ToolCall{"chatcmpl-tool-" + random_hex(32), v["name"].get<std::string>(),
                  python_json(args)};
}

}  // namespace

ToolCallParser parse_tool_call_parser(std::string_view name) {
  if (name.empty()) return ToolCallParser::kNone;
  if (name == "hermes") return ToolCallParser::kHermes;
  CTXPAR_INPUT_FAIL("--tool-call-parser '{}' is not supported; use hermes", name);
}

ToolCallSplit split_tool_calls(std::string_view text) {
  const size_t first = text.find(kOpen);
  if (first == std::string_view::npos) return {std::string(text), {}};
  ToolCallSplit out;
  for (size_t at = first; at != std::string_view::npos; at = text.find(kOpen, at)) {
    const size_t body = at + kOpen.size();
    const size_t close = text.find(kClose, body);
    const std::string_view call =
        close == std::string_view::npos ? text.substr(body) : text.substr(body, close - body);
    std::optional<ToolCall> parsed = parse_call(call);
    if (!parsed) return {std::string(text), {}};
    out.calls.push_back(std::move(*parsed));
    if (close == std::string_view::npos) break;
    at = close + kClose.size();
  }
  if (first > 0) out.content = std::string(text.substr(0, first));
  return out;
}

ToolCallStream::Delta ToolCallStream::add(std::string_view text, bool finished) {
  Delta d;
  std::string buf = held_ + std::string(text);
  held_.clear();
  for (;;) {
    if (!in_call_) {
      const size_t open = buf.find(kOpen);
      if (open == std::string::npos) {
        const size_t keep = finished ? 0 : partial_tag_tail(buf, kOpen);
        d.content += buf.substr(0, buf.size() - keep);
        held_ = buf.substr(buf.size() - keep);
        return d;
      }
      d.content += buf.substr(0, open);
      buf.erase(0, open + kOpen.size());
      in_call_ = true;
    }
    const size_t close = buf.find(kClose);
    if (close == std::string::npos && !finished) {
      held_ = std::move(buf);
      return d;
    }
    const std::string body = buf.substr(0, close);
    std::optional<ToolCall> call = parse_call(body);
    if (call) {
      d.calls.push_back(std::move(*call));
      ++calls_sent_;
    } else {  // not a call after all: its text goes out as it came
      d.content += std::string(kOpen) + body;
      if (close != std::string::npos) d.content += kClose;
    }
    in_call_ = false;
    if (close == std::string::npos) return d;
    buf.erase(0, close + kClose.size());
  }
}

}  // namespace ctxpar::server
