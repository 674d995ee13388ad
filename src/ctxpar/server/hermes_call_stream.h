// The streaming side of vLLM's hermes tool call parser (hermes_tool_calls.h): one call's text,
// the text between <tool_call> and </tool_call>, as it arrives.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ctxpar/server/python_json_stream.h"

namespace ctxpar::server {

// Its name once the text holds it whole, then its arguments in the form hermes_tool_call gives
// them, as far as the text fixes them (PythonJsonStream). Only the shape models write,
// {"name": "...", "arguments": {...}} with the name first and unescaped, streams its arguments;
// with any other they wait for the whole text.
class HermesCallStream {
 public:
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

 private:
  enum class Head : uint8_t { kReading, kArguments, kStopped };
  void read_head();

  std::string text_;  // the call's text so far
  Head head_ = Head::kReading;
  size_t args_at_ = 0;  // where the arguments begin in text_ (kArguments)
  std::string name_;
  PythonJsonStream args_;
  size_t args_fed_ = 0;  // bytes of text_ from args_at_ given to args_
  std::string sent_;
};

}  // namespace ctxpar::server
