// Qwen3CoderBlockStream: the calls of one qwen3_coder <tool_call> block sent while the block is
// still being written, so that a long call (a file's contents in a string parameter) streams
// instead of arriving whole at </tool_call>.
//
// Each time the block grows, the text that can no longer change is parsed as a whole block
// (qwen3_coder_tool_calls): its end is cut before a partial tag, before trailing newlines (one
// may be the value's last, which vLLM drops), and before a parameter still open unless the
// schema makes it a string (its value is then the text as written, so what arrived is final);
// a function whose name is not whole yet is left out. A call's arguments are then its JSON text
// without the closers still to come (`}`, and `"` inside an open string), and what went out is
// always a prefix of that. At the block's end its whole parse gives each call the rest. A call
// whose whole arguments do not continue what went out (vLLM keeps a repeated parameter at its
// first place with the last value), or a block vLLM cannot read after all, ends with the
// closers its sent text still needs, so the client holds valid JSON; the whole response has the
// exact calls. Each update parses the block from its start (linear in the block, per delta).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ctxpar/server/tool_call.h"

namespace ctxpar::server {

class Qwen3CoderBlockStream {
 public:
  // `tools` (the request's, typing the values) outlives the stream; null: none.
  explicit Qwen3CoderBlockStream(const nlohmann::json* tools) : tools_(tools) {}

  // `body`: the block's text so far (after <tool_call>, without </tool_call>). Adds the pieces
  // now certain to `out`, numbering new calls from `calls_sent`.
  void add(std::string_view body, int& calls_sent, std::vector<ToolCallPiece>& out);
  // The block ended; `calls`: its whole parse (nullopt: vLLM cannot read it). Adds the rest.
  void close(const std::optional<std::vector<ToolCall>>& calls, int& calls_sent,
             std::vector<ToolCallPiece>& out);
  // Some call of the block went out.
  bool started() const { return !sent_.empty(); }

 private:
  struct Sent {
    int index = 0;
    std::string arguments;  // sent so far
    std::string closers;    // what the arguments still lack to be whole JSON: "}" or "\"}"
    bool diverged = false;  // the parse stopped continuing what went out
  };
  // The call's next arguments (`args` without `closers`): sent when they continue what went out.
  void update(size_t k, const ToolCall& call, std::string args, std::string closers,
              int& calls_sent, std::vector<ToolCallPiece>& out);

  const nlohmann::json* tools_;
  std::vector<Sent> sent_;
};

}  // namespace ctxpar::server
