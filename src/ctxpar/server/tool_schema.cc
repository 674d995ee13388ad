#include "ctxpar/server/tool_schema.h"

namespace ctxpar::server {

const nlohmann::json* tool_parameters(const nlohmann::json& tools, std::string_view name) {
  if (!tools.is_array()) return nullptr;
  for (const nlohmann::json& tool : tools) {
    if (!tool.is_object() || !tool.contains("function") || !tool["function"].is_object()) continue;
    const nlohmann::json& function = tool["function"];
    const auto it = function.find("name");
    if (it == function.end() || !it->is_string() || it->get_ref<const std::string&>() != name) {
      continue;
    }
    const auto params = function.find("parameters");
    return params == function.end() || params->is_null() ? nullptr : &*params;
  }
  return nullptr;
}

bool is_string_parameter(const nlohmann::json& tools, std::string_view name, std::string_view arg) {
  const nlohmann::json* params = tool_parameters(tools, name);
  if (params == nullptr || !params->is_object()) return false;
  const auto props = params->find("properties");
  if (props == params->end() || !props->is_object()) return false;
  const auto prop = props->find(std::string(arg));
  if (prop == props->end() || !prop->is_object()) return false;
  const auto type = prop->find("type");
  return type != prop->end() && *type == "string";
}

}  // namespace ctxpar::server
