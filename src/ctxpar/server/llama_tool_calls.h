// vLLM's llama3_json tool call parser (vllm/tool_parsers/llama_tool_parser.py, the same from
// vLLM 0.23 to 0.33; Llama 3.1 / 3.2 / 3.3 with JSON tool calls):
//
//   {"name": "NAME", "parameters": {...}}; {"name": ..., "arguments": {...}}
//
// optionally after <|python_tag|>. vLLM reads the whole output, not the `;`s: from left to
// right, every `{` that does not lie inside (or right after) the last object read starts a JSON
// object (Python's json raw_decode, python_json_decode.h), and each must be a call: a string
// "name" and "arguments" (taken first) or "parameters", whose value, whatever it is, becomes the
// arguments as json.dumps text. Text around and between the objects is dropped, so the content
// of an output with calls is null. One `{` that does not start valid JSON, or an object that is
// not a call, makes vLLM give up: no calls, and the whole output is the content; so does an
// output without any `{`.
#pragma once

#include <string_view>
#include <vector>

#include "ctxpar/server/tool_call_parser.h"

namespace ctxpar::server {

struct LlamaJsonScan {
  enum class Outcome {
    kCalls,      // `calls` are the output's calls; its content is null
    kContent,    // no calls: the whole text is content, whatever text may still follow
    kUndecided,  // (not finished) every object so far is a call, or one is still open
  };
  Outcome outcome = Outcome::kContent;
  std::vector<ToolCall> calls;
};

// The calls in `text`. `finished`: the text is the whole output (an object still open at its end
// is then not JSON); otherwise more text may follow, and only what no continuation can change is
// decided: a `{` already known not to start a call makes it all content.
LlamaJsonScan scan_llama3_json(std::string_view text, bool finished);

ToolCallSplit split_llama3_json(std::string_view text);

}  // namespace ctxpar::server
