// vLLM's structured outputs on the OpenAI routes, turned into the grammar the engine masks
// tokens with: response_format {"type": "json_object"} and {"type": "json_schema",
// "json_schema": {"name", "schema", "strict"}}, vLLM's extra structured_outputs {"json": schema},
// {"json_object": true}, {"choice": [...]} or {"regex": pattern} (response_format wins over it,
// as in vLLM), and on chat the forced
// tool choices: tool_choice "required" (a JSON array, at least one item, of {"name": one of the
// tools' names, "parameters": that tool's parameters}) and {"type": "function", "function":
// {"name": X}} (X's parameters). vLLM's other constraints (grammar, structural_tag) and the
// removed guided_* fields are refused with a 400 naming them.
// structured_outputs {"disable_any_whitespace": true} (a server option in vLLM,
// --structured-outputs-config) makes every grammar of the request the compact form, ", " and
// ": " (xgrammar's any_whitespace=False); the default lets whitespace runs in, as vLLM's.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "ctxpar/engine/structured/json_automaton.h"

namespace ctxpar::server {

enum class ForcedToolChoice { kNone, kRequired, kNamed };

struct OutputConstraint {
  std::shared_ptr<const structured::JsonAutomaton> automaton;  // null: unconstrained
  ForcedToolChoice tools = ForcedToolChoice::kNone;
  std::string tool_name;  // kNamed
};

// `body`: the request as sent, its key order kept (a schema's property order is the order the
// output writes them in). `chat`: the chat endpoint (tool_choice applies). Throws ApiError 400
// naming the field for a malformed one, and the keyword for a schema ctxpar cannot enforce.
// The forced tool choices win over response_format, whose constraint vLLM then ignores too.
OutputConstraint parse_output_constraint(const nlohmann::ordered_json& body, bool chat);

// The schema tool_choice "required" constrains the output to, for a request's `tools` (as sent):
// {"type": "array", "minItems": 1, "items": {"anyOf": [{"properties": {"name": {"type":
// "string", "enum": [NAME]}, "parameters": PARAMETERS}, "required": ["name", "parameters"]},
// ...]}, "$defs": the tools' $defs merged}. Throws ApiError 400 when two tools define one $defs
// name differently.
nlohmann::ordered_json required_tools_schema(const nlohmann::ordered_json& tools);

}  // namespace ctxpar::server
