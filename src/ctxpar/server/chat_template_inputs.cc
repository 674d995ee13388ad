#include "ctxpar/server/chat_template_inputs.h"

#include <fmt/format.h>

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
