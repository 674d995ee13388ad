// Log-probabilities of sampled tokens, as vLLM returns them by default (logprobs_mode
// raw_logprobs): the log-softmax of the model's raw logits over the whole vocabulary, before
// penalties, temperature or truncation.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ctxpar::engine {

struct TokenLogprob {
  int32_t token = -1;
  float logprob = 0.0f;  // natural log; -inf for a masked (-inf) logit
};

// One output token's logprobs.
struct SampledLogprobs {
  TokenLogprob sampled;
  int64_t rank = 0;  // 1 + the number of tokens with a larger logit
  // The most likely tokens, most likely first (ties: lower id first).
  std::vector<TokenLogprob> top;
};

// logits: one row [vocab] (finite or -inf, at least one finite). num_top in [0, vocab].
// Throws ctxpar::Error for a token outside the row or num_top out of range.
SampledLogprobs token_logprobs(std::span<const float> logits, int32_t token, int32_t num_top);

}  // namespace ctxpar::engine
