// vLLM's deepseek_v3 and deepseek_v31 tool call parsers (vllm/tool_parsers/
// deepseekv3_tool_parser.py, deepseekv31_tool_parser.py; DeepSeek-V3 / R1, DeepSeek-V3.1) on the
// text of one block, between <｜tool▁calls▁begin｜> and <｜tool▁calls▁end｜> (or the end of the
// output):
//   deepseek_v3: <｜tool▁call▁begin｜>TYPE<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>
//   deepseek_v31: <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>
// each part on one line (vLLM's patterns match no newline there). The name and the arguments are
// kept as the model wrote them (the arguments are not re-serialized); text between calls, and a
// call that does not have the shape, is skipped.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "ctxpar/server/block_call_stream.h"
#include "ctxpar/server/tool_call_parser.h"

namespace ctxpar::server {

// The calls of a deepseek_v3 block; nullopt when a call's TYPE is not "function" (vLLM's
// ToolCall refuses it and the whole output is content).
std::optional<std::vector<ToolCall>> deepseek_v3_tool_calls(std::string_view body);

std::vector<ToolCall> deepseek_v31_tool_calls(std::string_view body);

// What of an open block's `body` is final (block_call_stream.h), for deepseek_v3 (`v3`) or
// deepseek_v31: the calls read as the parsers read them, cut before a partial tag; the last
// call still on its line once its name is whole, closed with its end tag, its arguments so far
// being the model's text as written (`raw_arguments`). A call whose line ends before its end
// tag is no call: a stream that sent part of it sends no more of it.
std::optional<StableBlock> deepseek_stable_block(std::string_view body, bool v3);

}  // namespace ctxpar::server
