// One tool call written as a JSON object {"name": "...", KEY: {...}} as its text arrives: a hermes
// call between <tool_call> and </tool_call> (KEY "arguments", hermes_tool_calls.h), or an item
// of the array tool_choice "required" holds the output to (KEY "parameters",
// tool_choice_output.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ctxpar/server/python_json_stream.h"

namespace ctxpar::server {

// Its name once the text holds it whole, then its arguments in the form the whole response
// gives them (python_json_text), as far as the text fixes them (PythonJsonStream). Only the
// shape models write, the name first and unescaped and KEY's value an object, streams its
// arguments; with any other they wait for the whole text.
class NamedCallStream {
 public:
  // `key`: "arguments" or "parameters".
  explicit NamedCallStream(std::string_view key);

  struct Piece {
    bool named = false;     // the name became known with this text
    std::string arguments;  // more of the arguments
  };
  // More of the call's text (never a piece of the closing tag).
  Piece add(std::string_view text);
  bool named() const { return !name_.empty(); }
  const std::string& name() const { return name_; }
  // Every argument byte add() returned.
  const std::string& arguments_sent() const { return sent_; }
  // The arguments' object has closed: it ended at arguments_end() bytes of all text added.
  bool arguments_done() const { return args_.done(); }
  size_t arguments_end() const { return args_at_ + args_.consumed(); }

 private:
  enum class Head : uint8_t { kReading, kArguments, kStopped };
  void read_head();

  std::string key_;   // with its quotes
  std::string text_;  // the call's text so far
  Head head_ = Head::kReading;
  size_t args_at_ = 0;  // where the arguments begin in text_ (kArguments)
  std::string name_;
  PythonJsonStream args_;
  size_t args_fed_ = 0;  // bytes of text_ from args_at_ given to args_
  std::string sent_;
};

}  // namespace ctxpar::server
