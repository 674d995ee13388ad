#include "ctxpar/tokenizer/chat_template/budget.h"

#include <fmt/format.h>

#include "ctxpar/tokenizer/chat_template/template_error.h"

namespace ctxpar::chat_template {

void Budget::charge(int64_t n) {
  steps_ += n;
  if (n < 0 || steps_ > limits_.max_steps) {
    throw TemplateError(fmt::format(
        "the template ran more than {} steps (loop iterations, statements, calls); it is "
        "looping without end or the conversation is far too large",
        limits_.max_steps));
  }
}

void Budget::check_size(size_t size) const {
  if (size > limits_.max_output_bytes) {
    throw TemplateError(
        fmt::format("the template built a string or list of {} bytes or items, "
                    "more than the limit of {}",
                    size, limits_.max_output_bytes));
  }
}

void Budget::enter_call() {
  if (++depth_ > limits_.max_call_depth) {
    --depth_;
    throw TemplateError(fmt::format("macro calls nest deeper than {} (unbounded recursion?)",
                                    limits_.max_call_depth));
  }
}

}  // namespace ctxpar::chat_template
