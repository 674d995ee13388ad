// vLLM's qwen3_coder tool call parser (vllm/tool_parsers/qwen3coder_tool_parser.py, vLLM 0.23, the
// last release that has it; Qwen3-Coder):
//
//   <tool_call>
//   <function=NAME>
//   <parameter=KEY>
//   VALUE
//   </parameter>
//   </function>
//   </tool_call>
//
// As vLLM reads a whole output: nothing happens without a "<function=" in it. The raw calls are
// the <tool_call> blocks (one left open runs to the end, less a final newline), or, when there
// is no <tool_call> at all, the whole output. Each <function= in a raw call starts a function,
// which runs to the next </function> (or to the end). A function's name is its text up to the
// first '>' (as written, not stripped; a function without '>' is skipped); after that, each
// <parameter= runs to the first </parameter>, next <parameter=, </function> or end (a final
// newline left out), and its name is its text up to the first '>' (as written). A parameter
// without '>' makes vLLM's parser raise: the whole output is content. A value loses one leading
// and one trailing newline and is typed by the parameter's schema in the request's tools
// (legacy_coerce_to_schema_type; a parameter the schema does not name stays text), a repeated
// parameter keeps its first place and takes the last value. The content is the text before the
// first <tool_call> (without one, before the first <function=), null when empty or only
// whitespace (vLLM's chat serving); without calls the whole output is the content.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "ctxpar/server/block_call_stream.h"
#include "ctxpar/server/tool_call_parser.h"

namespace ctxpar::server {

// The calls of one raw call's text: a <tool_call> block's body (`closed`: its </tool_call> came;
// an open block's body drops one final newline, as vLLM's `(.*?)$` does). nullopt where vLLM's
// parser raises.
std::optional<std::vector<ToolCall>> qwen3_coder_tool_calls(std::string_view body, bool closed,
                                                            const nlohmann::json& tools);

// Where the content of an output with calls ends (see the header).
size_t qwen3_coder_content_end(std::string_view text);

ToolCallSplit split_qwen3_coder(std::string_view text, const nlohmann::json& tools);

// What of an open block's `body` is final (block_call_stream.h): cut before a partial tag and
// before final newlines (one may be a value's last, which vLLM drops), without a function whose
// name is not whole, and without an open parameter unless its schema makes it a string
// (schema_types ["string"]: the value is the text as written).
std::optional<StableBlock> qwen3_coder_stable_block(std::string_view body,
                                                    const nlohmann::json& tools);

}  // namespace ctxpar::server
