// StructuredOutputState: where one request's output stands in its structured-output grammar,
// and the mask of the tokens it may sample next. Lives on the rank that samples (rank 0).
//
// The state is a function of the request's output tokens alone: sync() brings it to them,
// replaying from the start when they are not a continuation of what it saw (a request whose
// state was dropped, e.g. preempted and rebuilt, recomputes it from its outputs).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "ctxpar/engine/sampling_params.h"
#include "ctxpar/engine/structured/json_matcher.h"
#include "ctxpar/engine/structured/token_mask.h"

namespace ctxpar::engine {

class StructuredOutputState {
 public:
  // params.structured_output and params.token_vocabulary must be set (copied: the state keeps
  // what it needs).
  explicit StructuredOutputState(const SamplingParams& params);

  // Feeds the outputs not seen yet (all of them again when `output` does not extend what was
  // seen); with structured_output_after, only those after its first occurrence. A token the
  // grammar refuses (only a stop token, when masks were applied) leaves the state broken: from
  // then on only stop tokens are allowed.
  void sync(std::span<const int32_t> output);

  // Whether the next token is constrained (false while waiting for structured_output_after).
  bool constrained() const { return start_ >= 0; }

  // mask: [mask_words(vocab)] for the model's `vocab` ids (>= the token vocabulary's size). The
  // tokens the grammar allows next, EOS and stop tokens once the document is whole; never
  // empty: a broken state, or a whole document under min_tokens, allows the stop tokens. Only
  // when constrained().
  void fill_mask(std::span<uint32_t> mask);

  const structured::JsonMatcher& matcher() const { return matcher_; }
  bool broken() const { return broken_; }

 private:
  std::shared_ptr<const structured::TokenVocabulary> vocabulary_;
  std::vector<int32_t> stops_;  // EOS (unless ignore_eos) and stop_token_ids
  structured::JsonMatcher matcher_;
  structured::TokenMasker masker_;
  std::vector<int32_t> after_;  // structured_output_after
  std::vector<int32_t> seen_;   // the outputs synced so far
  int64_t start_ = -1;          // index in seen_ of the first constrained output; -1: not yet
  bool broken_ = false;
};

}  // namespace ctxpar::engine
