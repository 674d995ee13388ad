#include "ctxpar/server/tool_choice_output.h"

#include "ctxpar/server/openai_responses.h"
#include "ctxpar/server/python_json.h"

namespace ctxpar::server {
namespace {

std::string call_id() {
  return "chatcmpl-tool-" + random_hex(32);
}

bool blank(std::string_view text) {
  return text.find_first_not_of(" \t\n\r") == std::string_view::npos;
}

nlohmann::json call_json(const ToolCall& call, int index) {
  return {{"index", index},
          {"id", call.id},
          {"type", "function"},
          {"function", {{"name", call.name}, {"arguments", call.arguments}}}};
}

}  // namespace

std::vector<ToolCall> forced_tool_calls(ForcedToolChoice choice, const std::string& name,
                                        std::string_view text) {
  std::vector<ToolCall> calls;
  if (choice == ForcedToolChoice::kNamed) {
    if (!blank(text)) calls.push_back({call_id(), name, std::string(text)});
  } else if (choice == ForcedToolChoice::kRequired) {
    const auto list = nlohmann::ordered_json::parse(text, nullptr, false);
    if (list.is_discarded() || !list.is_array()) return {};
    for (const auto& item : list) {
      if (!item.is_object() || !item.contains("name") || !item["name"].is_string()) return {};
      const auto params = item.contains("parameters") ? item["parameters"] : nullptr;
      calls.push_back({call_id(), item["name"].get<std::string>(), python_json_text(params)});
    }
  }
  return calls;
}

nlohmann::json ForcedToolStream::add(std::string_view text, bool finished) {
  nlohmann::json out = nlohmann::json::array();
  if (choice_ == ForcedToolChoice::kNamed) {
    if (text.empty()) return out;
    if (sent_ == 0) {
      out.push_back(call_json({call_id(), name_, std::string(text)}, 0));
      sent_ = 1;
    } else {
      out.push_back({{"index", 0}, {"function", {{"arguments", std::string(text)}}}});
    }
  } else if (choice_ == ForcedToolChoice::kRequired) {
    text_ += text;
    if (!finished) return out;
    for (const ToolCall& call : forced_tool_calls(choice_, name_, text_)) {
      out.push_back(call_json(call, sent_++));
    }
  }
  return out;
}

}  // namespace ctxpar::server
