// vLLM's glm45 and glm47 tool call parsers (vllm/tool_parsers/glm4_moe_tool_parser.py and
// glm47_moe_tool_parser.py; GLM-4.5 / 4.6 and GLM-4.7 / GLM-5) on the text of one call, the
// text between <tool_call> and </tool_call>:
//
//   NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>...     (any whitespace between tags)
//
// glm45 takes the name from the first line (a call without a newline is no call); glm47 takes
// the first run of non-whitespace, which may be followed by whitespace and the first <arg_key>,
// or end the call (a call without arguments). A call that does not have this shape is skipped.
// Keys are stripped. A value of a parameter the request's tools declare {"type": "string"} is
// kept as written; any other value is stripped and typed: json.loads, else ast.literal_eval,
// else the text as a string. The arguments are json.dumps of the keys in order (a repeated key
// keeps its place and takes the last value).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "ctxpar/server/block_call_stream.h"
#include "ctxpar/server/tool_call_parser.h"

namespace ctxpar::server {

// The call in `body` (empty: no call of this shape), or nullopt when json.dumps refuses a value
// (a Python set, bytes or complex literal: vLLM's parser raises and the whole output is
// content).
std::optional<std::vector<ToolCall>> glm_tool_call(std::string_view body, bool glm47,
                                                   const nlohmann::json& tools);

// What of an open call's `body` is final (block_call_stream.h): nothing until the name is
// whole (glm47: an <arg_key> follows it; glm45: its line ended), then the text cut before a
// partial tag, and without the open argument unless the tools declare it a string (its value
// is then the text as written; the stable text closes it with </arg_value>).
std::optional<StableBlock> glm_stable_block(std::string_view body, bool glm47,
                                            const nlohmann::json& tools);

}  // namespace ctxpar::server
