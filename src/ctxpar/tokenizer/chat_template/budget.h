// Bounds on one render, so a hostile template ends with an error instead of running forever or
// filling memory: steps (statements, loop iterations, calls, and list items built by range and
// friends), the size of the output and of any string or list a template builds, and the depth
// of macro calls.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ctxpar::chat_template {

struct RenderLimits {
  int64_t max_steps = 20'000'000;
  size_t max_output_bytes = size_t{64} << 20;  // also bounds any one string or list
  int max_call_depth = 100;
};

class Budget {
 public:
  explicit Budget(const RenderLimits& limits) : limits_(limits) {}
  // Counts n steps; throws TemplateError once the total passes max_steps.
  void charge(int64_t n = 1);
  // Throws TemplateError if a string or list of `size` bytes/items would pass the limit.
  void check_size(size_t size) const;
  void enter_call();  // throws TemplateError past max_call_depth
  void leave_call() { --depth_; }
  const RenderLimits& limits() const { return limits_; }

 private:
  RenderLimits limits_;
  int64_t steps_ = 0;
  int depth_ = 0;
};

}  // namespace ctxpar::chat_template
