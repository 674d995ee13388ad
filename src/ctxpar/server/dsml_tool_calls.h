// vLLM's deepseek_v32 tool call parser (vllm/tool_parsers/deepseekv32_tool_parser.py) on the
// text of one DSML block, between <｜DSML｜function_calls> and </｜DSML｜function_calls> (the bars
// are U+FF5C, as DeepSeek-V3.2's encoder writes them):
//
//   <｜DSML｜invoke name="NAME">
//   <｜DSML｜parameter name="KEY" string="true|false">VALUE</｜DSML｜parameter>
//   ...
//   </｜DSML｜invoke>
//   ...
//
// Each complete invoke is a call; text around invokes and parameters, and a parameter whose tag
// does not have this shape, is skipped (a repeated parameter takes the last value, in its first
// place). A string="true" value is the text as written; any other is typed by the parameter's
// schema in the request's tools (coerce_to_schema_type; a parameter the schema does not name
// stays text). When the only parameter is `arguments` or `input`, the schema does not name it,
// and it holds an object (or its JSON text) whose keys the schema names, the object is the
// arguments (vLLM's _repair_param_dict). Arguments are json.dumps text.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "ctxpar/server/block_call_stream.h"
#include "ctxpar/server/tool_call_parser.h"

namespace ctxpar::server {

// The calls of one block's text (none when it holds no complete invoke).
std::vector<ToolCall> dsml_tool_calls(std::string_view body, const nlohmann::json& tools);

// What of an open block's `body` is final (block_call_stream.h), as a block text whose invokes
// are closed: cut before a partial tag, without an invoke whose header is not whole, and
// without an open parameter unless it is string="true" (its value is then the text as written).
std::optional<StableBlock> dsml_stable_block(std::string_view body);

}  // namespace ctxpar::server
