// Interpreter: walks a parsed template over a context and produces the rendered text, with
// jinja2's scoping (each for-loop iteration and macro call gets its own frame; if blocks do
// not; a macro sees the frame it was defined in) and HF's globals: raise_exception,
// strftime_now, range, dict, namespace.
#pragma once

#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ctxpar/tokenizer/chat_template/ast.h"
#include "ctxpar/tokenizer/chat_template/budget.h"
#include "ctxpar/tokenizer/chat_template/source_map.h"
#include "ctxpar/tokenizer/chat_template/value.h"

namespace ctxpar::chat_template {

// Variables of one scope; lookups go on to the parent.
struct Frame {
  std::vector<std::pair<std::string, Value>> vars;
  std::shared_ptr<Frame> parent;

  const Value* find(std::string_view name) const;
  void set(std::string name, Value value);
};

// The local time strftime_now() formats (HF calls datetime.now().strftime(fmt)).
using Clock = std::function<std::tm()>;

// Renders `body` with the entries of `context` as top-level variables. Throws ctxpar::InputError:
// for a render error, "chat template <origin>:<line>:<col>: <what jinja2 would say>"; for
// raise_exception(msg), exactly msg; past a limit, a message naming the limit.
std::string render_body(const Body& body, const SourceMap& map, const Dict& context,
                        const RenderLimits& limits, const Clock& now);

}  // namespace ctxpar::chat_template
