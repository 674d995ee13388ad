#include "ctxpar/engine/structured_output.h"

#include <algorithm>

#include "ctxpar/core/error.h"

namespace ctxpar::engine {

StructuredOutputState::StructuredOutputState(const SamplingParams& params)
    : vocabulary_(params.token_vocabulary),
      matcher_(params.structured_output),
      masker_(*vocabulary_),
      after_(params.structured_output_after),
      start_(after_.empty() ? 0 : -1) {
  if (!params.ignore_eos) stops_ = params.eos_token_ids;
  stops_.insert(stops_.end(), params.stop_token_ids.begin(), params.stop_token_ids.end());
}

void StructuredOutputState::sync(std::span<const int32_t> output) {
  const bool extends =
      output.size() >= seen_.size() && std::equal(seen_.begin(), seen_.end(), output.begin());
  if (!extends) {
    matcher_.reset();
    seen_.clear();
    broken_ = false;
    start_ = after_.empty() ? 0 : -1;
  }
  for (size_t i = seen_.size(); i < output.size(); ++i) {
    const int32_t t = output[i];
    seen_.push_back(t);
    if (start_ < 0) {
      // Waiting for the marker: does it end here?
      if (seen_.size() >= after_.size() &&
          std::equal(after_.begin(), after_.end(),
                     seen_.end() - static_cast<ptrdiff_t>(after_.size()))) {
        start_ = static_cast<int64_t>(seen_.size());
      }
      continue;
    }
    if (broken_) continue;
    const auto& bytes = vocabulary_->bytes(t);
    if (!bytes || !matcher_.accept(*bytes)) broken_ = true;
  }
}

void StructuredOutputState::fill_mask(std::span<uint32_t> mask) {
  int64_t allowed = 0;
  if (!broken_) allowed = masker_.fill(matcher_.automaton(), matcher_.state(), stops_, mask);
  if (broken_ || allowed == 0) {
    std::fill(mask.begin(), mask.end(), 0u);
    for (const int32_t t : stops_) {
      if (t >= 0 && static_cast<size_t>(t) / 32 < mask.size()) {
        mask[static_cast<size_t>(t) / 32] |= 1u << (t % 32);
      }
    }
  }
}

}  // namespace ctxpar::engine
