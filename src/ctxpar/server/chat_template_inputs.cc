#include "ctxpar/server/chat_template_inputs.h"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <string_view>

#include "ctxpar/server/api_error.h"
#include "ctxpar/server/json_fields.h"

namespace ctxpar::server {

using ordered_json = nlohmann::ordered_json;

ordered_json template_tools(const ordered_json& tools) {
  if (!tools.is_array()) return tools;
  ordered_json out = ordered_json::array();
  for (const ordered_json& tool : tools) {
    const ordered_json& f = field(tool, "function");
    ordered_json function = {{"name", field(f, "name")},
                             {"description", field(f, "description")},
                             {"parameters", field(f, "parameters")}};
    if (const ordered_json& strict = field(f, "strict"); !strict.is_null()) {
      function["strict"] = strict;
    }
    ordered_json defer = field(f, "defer_loading");
    if (defer.is_null()) defer = field(tool, "defer_loading");
    if (!defer.is_null()) function["defer_loading"] = defer;
    ordered_json dumped = {{"type", string_or(tool, "type", "function")},
                           {"function", std::move(function)}};
    if (const ordered_json& d = field(tool, "defer_loading"); !d.is_null()) {
      dumped["defer_loading"] = d;
    }
    out.push_back(std::move(dumped));
  }
  return out;
}

namespace {

// A system message without Claude Code's billing header line (its per-request hash would defeat
// the prefix cache): a text that starts with it loses its first line, and goes when that was all.
nlohmann::json strip_billing_header(const nlohmann::json& message) {
  const auto strip = [](const std::string& text) -> std::optional<std::string> {
    if (!text.starts_with(kClaudeCodeBillingHeader)) return text;
    const size_t newline = text.find('\n');
    if (newline == std::string::npos || newline + 1 == text.size()) return std::nullopt;
    return text.substr(newline + 1);
  };
  nlohmann::json out = message;
  const auto it = message.find("content");
  if (it == message.end()) return out;
  if (it->is_string()) {
    const std::optional<std::string> kept = strip(it->get<std::string>());
    out["content"] = kept ? nlohmann::json(*kept) : nlohmann::json::array();
  } else if (it->is_array()) {
    nlohmann::json parts = nlohmann::json::array();
    for (const nlohmann::json& part : *it) {
      const bool text = part.is_object() && part.value("type", "") == "text" &&
                        part.contains("text") && part["text"].is_string();
      if (!text) {
        parts.push_back(part);
      } else if (const auto kept = strip(part["text"].get<std::string>())) {
        nlohmann::json p = part;
        p["text"] = *kept;
        parts.push_back(std::move(p));
      }
    }
    out["content"] = std::move(parts);
  }
  return out;
}

}  // namespace

ordered_json template_message(const nlohmann::json& message, const ordered_json& ordered,
                              size_t index, ChatContentFormat format) {
  const std::string role = message.value("role", "");
  ordered_json out = {{"role", role}};
  if (role == "tool") {
    // vLLM flattens a tool result's text parts to one string whatever the format: most
    // templates print a tool message's content as it is.
    out["content"] = template_content(message, index, ChatContentFormat::kString);
  } else {
    out["content"] =
        template_content(role == "system" ? strip_billing_header(message) : message, index, format);
  }
  if (role == "assistant") {
    if (const ordered_json& calls = field(ordered, "tool_calls"); !calls.is_null()) {
      out["tool_calls"] = calls;
    }
    if (const ordered_json& reasoning = field(ordered, "reasoning"); !reasoning.is_null()) {
      out["reasoning"] = reasoning;
      out["reasoning_content"] = reasoning;
    }
    parse_tool_call_arguments(out, index);
  }
  if (role == "tool" && ordered.contains("tool_call_id"))
    out["tool_call_id"] = ordered["tool_call_id"];
  if (const ordered_json& name = field(ordered, "name"); name.is_string()) out["name"] = name;
  return out;
}

void parse_tool_call_arguments(ordered_json& message, size_t index) {
  if (string_or(message, "role", "") != "assistant" || !message.contains("tool_calls")) return;
  ordered_json& calls = message["tool_calls"];
  if (!calls.is_array()) return;
  if (calls.empty()) {
    message.erase("tool_calls");  // templates then take the plain assistant path
    return;
  }
  for (size_t k = 0; k < calls.size(); ++k) {
    ordered_json& call = calls[k];
    const std::string where = fmt::format("messages[{}].tool_calls[{}]", index, k);
    if (!call.is_object()) {
      throw bad_request(where + ": assistant tool_calls entries must be objects.", "tool_calls");
    }
    if (string_or(call, "type", "function") != "function" || !field(call, "function").is_object()) {
      throw bad_request(
          where + ": chat completions only support assistant tool_calls of type 'function'.",
          "tool_calls");
    }
    ordered_json& arguments = call["function"]["arguments"];
    ordered_json parsed = arguments;
    if (arguments.is_string()) {
      parsed =
          ordered_json::parse(arguments.get<std::string>(), nullptr, /*allow_exceptions=*/false);
    }
    // Python truthiness: null, "" and {} all read as no arguments.
    const bool empty = arguments.is_null() || (arguments.is_string() && arguments.empty()) ||
                       (arguments.is_object() && arguments.empty());
    arguments = !empty && parsed.is_object() ? std::move(parsed) : ordered_json::object();
  }
}

}  // namespace ctxpar::server
