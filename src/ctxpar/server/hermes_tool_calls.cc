#include "ctxpar/server/hermes_tool_calls.h"

#include <nlohmann/json.hpp>

#include "ctxpar/server/openai_responses.h"
#include "ctxpar/server/python_json.h"

namespace ctxpar::server {

std::optional<std::vector<ToolCall>> hermes_tool_call(std::string_view body) {
  using ordered_json = nlohmann::ordered_json;
  const ordered_json v = ordered_json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!v.is_object() || !v.contains("name") || !v["name"].is_string() || !v.contains("arguments")) {
    return std::nullopt;
  }
  ordered_json args = v["arguments"];
  if (args.is_string()) {
    args = ordered_json::parse(args.get<std::string>(), nullptr, false);
    if (args.is_discarded()) return std::nullopt;
  }
  return std::vector<ToolCall>{ToolCall{"chatcmpl-tool-" + random_hex(32),
                                        v["name"].get<std::string>(), python_json_text(args)}};
}

}  // namespace ctxpar::server
