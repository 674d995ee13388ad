// The tool calls of a forced tool choice (output_constraint.h), whose output the grammar holds
// to JSON: tool_choice {"type": "function", "function": {"name": X}} writes X's arguments,
// tool_choice "required" a JSON array of {"name", "parameters"}. As vLLM's chat serving parses
// them (vllm/parser/abstract_parser.py), the message content is then "".
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "ctxpar/server/output_constraint.h"
#include "ctxpar/server/tool_call_parser.h"

namespace ctxpar::server {

// kNamed: one call named `name` whose arguments are the text as generated, none for a blank
// text. kRequired: a call per item of the JSON array the text holds, arguments as Python's
// json.dumps(parameters, ensure_ascii=False) writes them; none when the text is not such an
// array (e.g. max_tokens cut it short). kNone: none.
std::vector<ToolCall> forced_tool_calls(ForcedToolChoice choice, const std::string& name,
                                        std::string_view text);

// One choice's stream. kNamed streams as vLLM: the call's id, name and first piece of arguments
// with the first text, then each piece of arguments. kRequired sends the whole calls once the
// output ends (vLLM streams them piece by piece; the client's accumulated message is the same).
class ForcedToolStream {
 public:
  ForcedToolStream() = default;
  ForcedToolStream(ForcedToolChoice choice, std::string name)
      : choice_(choice), name_(std::move(name)) {}

  // The "tool_calls" entries of the delta for the next text (each with its "index"); empty:
  // nothing to send.
  nlohmann::json add(std::string_view text, bool finished);
  int calls_sent() const { return sent_; }

 private:
  ForcedToolChoice choice_ = ForcedToolChoice::kNone;
  std::string name_;
  std::string text_;  // kRequired: everything so far
  int sent_ = 0;
};

}  // namespace ctxpar::server
