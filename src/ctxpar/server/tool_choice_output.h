// The tool calls of a forced tool choice (output_constraint.h), whose output the grammar holds
// to JSON: tool_choice {"type": "function", "function": {"name": X}} writes X's arguments,
// tool_choice "required" a JSON array of {"name", "parameters"}. As vLLM's chat serving parses
// them (vllm/parser/abstract_parser.py), the message content is then "".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ctxpar/server/named_call_stream.h"
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
// with the first text, then each piece of arguments. kRequired streams as vLLM too: each item's
// id and name once the name is whole, then its parameters piece by piece (NamedCallStream), in
// the json.dumps form of the whole response; when the output ends, what the whole array adds.
// An array cut short (max_tokens) gives the whole response no calls, but what streamed stays
// sent, as in vLLM.
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
  // kRequired: reads text_ from at_ as far as it can, adding the streamed pieces to `out`.
  void read_array(nlohmann::json& out);
  void finish_array(nlohmann::json& out);

  enum class Array : uint8_t { kOpen, kItemStart, kItem, kItemClose, kAfterItem, kDone, kStopped };
  ForcedToolChoice choice_ = ForcedToolChoice::kNone;
  std::string name_;
  std::string text_;  // kRequired: everything so far
  Array array_ = Array::kOpen;
  size_t at_ = 0;                        // bytes of text_ read
  size_t item_at_ = 0;                   // where the current item begins in text_
  std::optional<NamedCallStream> item_;  // the current item
  size_t item_fed_ = 0;                  // bytes of it given to item_
  std::vector<std::string> streamed_;    // each started call's arguments sent so far
  int sent_ = 0;
};

}  // namespace ctxpar::server
