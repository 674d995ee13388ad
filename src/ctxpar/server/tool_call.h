// A tool call the model made, whole or as a streamed piece (the parsers' common output).
#pragma once

#include <string>

namespace ctxpar::server {

struct ToolCall {
  std::string id;  // "chatcmpl-tool-" + 32 hex digits, as vLLM's
  std::string name;
  std::string arguments;  // JSON text
};

// One "tool_calls" entry of a streamed delta. A call's first entry has its id and name (and
// any arguments so far); later ones add to its arguments.
struct ToolCallPiece {
  int index = 0;
  std::string id;
  std::string name;
  std::string arguments;
};

}  // namespace ctxpar::server
