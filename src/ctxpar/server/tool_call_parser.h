// vLLM's --tool-call-parser hermes (with --enable-auto-tool-choice), the format of Qwen2.5,
// Qwen3 and Hermes models: a tool call is a JSON object {"name": ..., "arguments": {...}}
// between <tool_call> and </tool_call> in the output (vllm/tool_parsers/hermes_tool_parser.py).
//
// A whole output, as vLLM splits it: the calls (a last one left open at the end of the output
// counts too), each with its arguments as JSON text in Python's json.dumps form (", " and ": ",
// keys in the model's order), and the text before the first <tool_call> as content (null when
// empty); a call that is not a JSON object with a string "name" makes it no calls and all
// content. Streamed, text outside calls goes out as content, and each call goes out whole once
// its </tool_call> arrives (vLLM streams a call's arguments piece by piece; the client's
// accumulated message is the same).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ctxpar::server {

enum class ToolCallParser { kNone, kHermes };

// "" → kNone; "hermes". Throws InputError naming the value and the valid one.
ToolCallParser parse_tool_call_parser(std::string_view name);

struct ToolCall {
  std::string id;  // "chatcmpl-tool-" + 32 hex digits, as vLLM's
  std::string name;
  std::string arguments;  // JSON text
};

struct ToolCallSplit {
  std::optional<std::string> content;  // null: none
  std::vector<ToolCall> calls;
};

// The whole output's calls and content.
ToolCallSplit split_tool_calls(std::string_view text);

// One choice's streamed output.
class ToolCallStream {
 public:
  struct Delta {
    std::string content;
    std::vector<ToolCall> calls;
  };
  // The next text (after any reasoning split); `finished` releases what is held back, and an
  // open call that parses becomes a call.
  Delta add(std::string_view text, bool finished);
  int calls_sent() const { return calls_sent_; }

 private:
  std::string held_;      // a tail that may begin <tool_call>, or an open call's text
  bool in_call_ = false;  // held_ is the text of a call after its <tool_call>
  int calls_sent_ = 0;
};

}  // namespace ctxpar::server
