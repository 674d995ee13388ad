#include "ctxpar/server/output_constraint.h"

#include <fmt/format.h>

#include <string_view>
#include <utility>

#include "ctxpar/core/error.h"
#include "ctxpar/engine/structured/schema_compiler.h"
#include "ctxpar/server/api_error.h"

namespace ctxpar::server {
namespace {

using json = nlohmann::ordered_json;

const json& field(const json& object, const char* name) {
  static const json null_value;
  const auto it = object.find(name);
  return it == object.end() ? null_value : *it;
}

std::shared_ptr<const structured::JsonAutomaton> automaton_of(structured::Grammar grammar) {
  return std::make_shared<structured::JsonAutomaton>(
      std::make_shared<structured::Grammar>(std::move(grammar)));
}

// The schema compiled, or a 400 naming `param` and what the compiler refused.
std::shared_ptr<const structured::JsonAutomaton> compile(const json& schema, const char* param,
                                                         bool any_ws) {
  try {
    return automaton_of(structured::compile_json_schema(schema, any_ws));
  } catch (const InputError& e) {
    throw bad_request(fmt::format("{}: {}", param, e.what()), param);
  }
}

// A parameters schema as a tool gives it: none means an object with no properties (vLLM's
// _get_tool_schema_from_name_and_params).
json parameters_of(const json& function) {
  const json& p = field(function, "parameters");
  return p.is_null() ? json{{"type", "object"}, {"properties", json::object()}} : p;
}

std::shared_ptr<const structured::JsonAutomaton> from_structured_outputs(const json& so,
                                                                         bool any_ws) {
  if (!so.is_object()) {
    throw bad_request("structured_outputs: Input should be a valid object", "structured_outputs");
  }
  int kinds = 0;
  for (const char* k : {"json", "regex", "choice"}) kinds += field(so, k).is_null() ? 0 : 1;
  if (kinds > 1) {
    throw bad_request(
        "You can only use one kind of constraints for structured outputs ('json', 'regex' or "
        "'choice').",
        "structured_outputs");
  }
  for (const auto& [key, value] : so.items()) {
    if (value.is_null() || key == "json" || key == "json_object" || key == "choice" ||
        key == "regex" || key == "disable_fallback") {
      continue;
    }
    if (key == "disable_any_whitespace" && value.is_boolean()) continue;
    if (key == "disable_additional_properties" && value == false) continue;
    throw bad_request(fmt::format("structured_outputs.{} is not supported by ctxpar (json, "
                                  "json_object, regex and choice are)",
                                  key),
                      "structured_outputs");
  }
  const json& schema = field(so, "json");
  if (!schema.is_null()) {
    if (schema.is_string()) {
      try {
        return compile(json::parse(schema.get<std::string>()), "structured_outputs", any_ws);
      } catch (const json::parse_error&) {
        throw bad_request("Invalid JSON grammar specification.", "structured_outputs");
      }
    }
    return compile(schema, "structured_outputs", any_ws);
  }
  const json& regex = field(so, "regex");
  if (!regex.is_null()) {
    if (!regex.is_string()) {
      throw bad_request("structured_outputs.regex: Input should be a valid string",
                        "structured_outputs");
    }
    try {
      return automaton_of(structured::regex_grammar(regex.get<std::string>()));
    } catch (const InputError& e) {
      throw bad_request(fmt::format("structured_outputs.{}", e.what()), "structured_outputs");
    }
  }
  const json& choice = field(so, "choice");
  if (!choice.is_null()) {
    std::vector<std::string> choices;
    for (const json& c : choice.is_array() ? choice : json::array({nullptr})) {
      if (!c.is_string()) {
        throw bad_request("structured_outputs.choice: Input should be a valid list of strings",
                          "structured_outputs");
      }
      choices.push_back(c.get<std::string>());
    }
    try {
      return automaton_of(structured::choice_grammar(choices));
    } catch (const InputError& e) {
      throw bad_request(fmt::format("structured_outputs.{}", e.what()), "structured_outputs");
    }
  }
  const json& object = field(so, "json_object");
  if (object == true) return automaton_of(structured::json_object_grammar(any_ws));
  return nullptr;
}

std::shared_ptr<const structured::JsonAutomaton> from_response_format(const json& format,
                                                                      bool any_ws) {
  if (!format.is_object() || !field(format, "type").is_string()) {
    throw bad_request("response_format: Input should be an object with a string \"type\"",
                      "response_format");
  }
  const std::string type = format["type"].get<std::string>();
  if (type == "text") return nullptr;
  if (type == "json_object") return automaton_of(structured::json_object_grammar(any_ws));
  if (type == "json_schema") {
    const json& js = field(format, "json_schema");
    if (js.is_null()) {
      throw bad_request(
          "When response_format type is 'json_schema', the 'json_schema' field must be "
          "provided.",
          "response_format");
    }
    if (!js.is_object() || !field(js, "name").is_string()) {
      throw bad_request("response_format.json_schema.name: Field required", "response_format");
    }
    const json& schema = field(js, "schema");
    if (!schema.is_object() && !schema.is_boolean()) {
      throw bad_request("response_format.json_schema.schema: ctxpar needs the JSON schema object",
                        "response_format");
    }
    return compile(schema, "response_format", any_ws);
  }
  throw bad_request(fmt::format("response_format type \"{}\" is not supported by ctxpar (text, "
                                "json_object and json_schema are)",
                                type),
                    "response_format");
}

}  // namespace

json required_tools_schema(const json& tools) {
  json options = json::array();
  json defs = json::object();
  for (const json& tool : tools) {
    const json& function = field(tool, "function");
    json parameters = parameters_of(function);
    if (parameters.is_object() && parameters.contains("$defs")) {
      for (const auto& [name, def] : parameters["$defs"].items()) {
        if (defs.contains(name) && defs[name] != def) {
          throw bad_request(fmt::format("Tool definition '{}' has multiple schemas, which is not "
                                        "supported.",
                                        name),
                            "tools");
        }
        defs[name] = def;
      }
      parameters.erase("$defs");
    }
    options.push_back(
        {{"properties",
          {{"name", {{"type", "string"}, {"enum", json::array({field(function, "name")})}}},
           {"parameters", parameters}}},
         {"required", json::array({"name", "parameters"})}});
  }
  // vLLM's items also say "type": "object" beside "anyOf"; every option is an object already.
  json schema = {{"type", "array"}, {"minItems", 1}, {"items", {{"anyOf", options}}}};
  if (!defs.empty()) schema["$defs"] = defs;
  return schema;
}

OutputConstraint parse_output_constraint(const json& body, bool chat) {
  // vLLM's replacement for each: its key in structured_outputs.
  for (const auto& [removed, key] :
       {std::pair{"guided_json", "json"}, std::pair{"guided_regex", "regex"},
        std::pair{"guided_choice", "choice"}, std::pair{"guided_grammar", "grammar"}}) {
    if (!field(body, removed).is_null()) {
      throw bad_request(
          fmt::format("{} was removed from vLLM and is not supported by ctxpar; "
                      "use structured_outputs {{\"{}\": ...}}{}",
                      removed, key,
                      std::string_view(key) == "grammar" ? " (which ctxpar does not support either)"
                      : std::string_view(key) == "json"  ? " or response_format"
                                                         : ""),
          removed);
    }
  }
  OutputConstraint out;
  const json& so = field(body, "structured_outputs");
  const json& format = field(body, "response_format");
  // vLLM's disable_any_whitespace (a server option there): applies to the whole request here.
  const bool any_ws = !(so.is_object() && field(so, "disable_any_whitespace") == true);
  if (!so.is_null()) out.automaton = from_structured_outputs(so, any_ws);
  if (!format.is_null()) {
    if (auto a = from_response_format(format, any_ws)) out.automaton = std::move(a);
  }
  if (!chat) return out;
  const json& choice = field(body, "tool_choice");
  const json& tools = field(body, "tools");
  if (choice == "required") {
    out.tools = ForcedToolChoice::kRequired;
    out.automaton = compile(required_tools_schema(tools), "tools", any_ws);
  } else if (choice.is_object()) {
    if (!so.is_null() && !field(so, "json").is_null()) {  // vLLM's check_structured_outputs_count
      throw bad_request(
          "You can only either use constraints for structured outputs or tools, "
          "not both.");
    }
    out.tools = ForcedToolChoice::kNamed;
    out.tool_name = choice["function"]["name"].get<std::string>();  // checked by the protocol
    for (const json& tool : tools) {
      const json& function = field(tool, "function");
      if (field(function, "name") == out.tool_name) {
        out.automaton = compile(parameters_of(function), "tools", any_ws);
      }
    }
  }
  return out;
}

}  // namespace ctxpar::server
