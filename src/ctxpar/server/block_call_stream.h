// BlockCallStream: the calls of one tool-call block (qwen3_coder's or GLM's <tool_call> ...)
// sent while the block is still being written, so that a long call (a file's contents in a
// string parameter) streams instead of arriving whole at </tool_call>.
//
// Each time the block grows, the format's stable cut (qwen3_coder_stable_block,
// glm_stable_block) gives the part that can no longer change, as text its whole-block parser
// reads: cut before a partial tag, before a value still open unless the schema makes it a
// string (its value is then the text as written, so what arrived is final), and without a call
// whose name may still grow. A call's arguments are then its JSON text without the closers
// still to come (`}`, and `"` inside an open string), and what went out is always a prefix of
// that. At the block's end its whole parse gives each call the rest. A call whose whole
// arguments do not continue what went out (both formats keep a repeated parameter at its first
// place with the last value), or a block vLLM cannot read after all, ends with the closers its
// sent text still needs, so the client holds valid JSON; the whole response has the exact
// calls. An update parses the block from its start, except while the text grows inside the open
// string value the last update ended in: that text is only escaped and sent.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ctxpar/server/tool_call.h"

namespace ctxpar::server {

// What of an open block is final, as a closed block's text.
struct StableBlock {
  std::string text;
  bool open_call = false;    // the last call is still being written: its arguments lack "}"
  bool open_string = false;  // ... inside a string value: they lack "\"}"
  // The arguments are the model's own text, not built JSON: nothing is known to close them.
  bool raw_arguments = false;
  // With open_string: the open value's text so far is body[value_at, value_end) exactly (npos:
  // not known yet). Later text of the same value only appends to it, escaped.
  size_t value_at = std::string_view::npos, value_end = std::string_view::npos;
};

class BlockCallStream {
 public:
  // stable_cut(body): what of the open block `body` is final (nullopt: nothing yet);
  // parse(text): the calls of a closed block's text (nullopt: vLLM cannot read it).
  using StableCut = std::function<std::optional<StableBlock>(std::string_view body)>;
  using Parse = std::function<std::optional<std::vector<ToolCall>>(std::string_view text)>;
  BlockCallStream(StableCut stable_cut, Parse parse)
      : stable_cut_(std::move(stable_cut)), parse_(std::move(parse)) {}

  // `body`: the block's text so far (after its opening tag, without the closing one). Adds the
  // pieces now certain to `out`, numbering new calls from `calls_sent`.
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
    bool raw_open = false;  // raw arguments, the call still open (it may turn out no call)
    bool diverged = false;  // the parse stopped continuing what went out: it is ended
  };
  // The sent call that the parse's call k (with `args`) is: k, less the calls found to be
  // none; may drop the last one for that (sent_.size(): a new call).
  size_t slot(size_t k, const std::string& args);
  // The call's next arguments (`args` without `closers`): sent when they continue what went out.
  void update(size_t k, const ToolCall& call, std::string args, std::string closers, bool raw_open,
              int& calls_sent, std::vector<ToolCallPiece>& out);

  StableCut stable_cut_;
  Parse parse_;
  std::vector<Sent> sent_;
  size_t vanished_ = 0;  // sent calls that turned out no call (raw arguments only)
  // The open string value the last call's sent arguments end in, and how much of it went out:
  // while the block only grows inside it, the new text is escaped and sent without a parse.
  size_t value_at_ = std::string_view::npos, value_sent_ = 0;
};

}  // namespace ctxpar::server
