// Sampler: turns each request's row of logits into its next token (DESIGN.md §6: rank 0
// samples after the logits are gathered).
//
// Per row, with the request's SamplingParams, after the logits processors (min_tokens and
// penalties, logits_processors.h) changed a copy of the row:
//   greedy (temperature ~ 0): argmax, ties -> the lowest id; draws no random number;
//   otherwise: softmax of logits / temperature, restricted to
//     min-p: the tokens whose probability is at least min_p x the largest one, then
//     top-k: the k tokens ranked first (rank: higher logit first, ties -> lower id), then
//     top-p: the shortest rank-order prefix of those whose probability mass, renormalized
//            over them, reaches top_p (at least one token);
//   and draws exactly one 64-bit number u from the request's generator (its own when seeded,
//   else the sampler's shared one) to pick by inverse CDF over the kept tokens in ascending id
//   order. One draw per token is what makes a seeded request's tokens independent of the
//   batch it is in and of the row it occupies.
// Logits must be finite or -inf (masked); NaN or +inf, or a row with no finite logit, throws
// ctxpar::Error naming the row and token.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "ctxpar/core/tensor.h"
#include "ctxpar/core/thread_pool.h"
#include "ctxpar/engine/sampling_params.h"

namespace ctxpar::engine {

// One row of a sampling batch.
struct SamplingRow {
  const SamplingParams* params = nullptr;  // required
  // The request's own generator (Request::generator()), or null for the sampler's shared one.
  std::mt19937_64* generator = nullptr;
  // The request's tokens so far, for the penalties and min_tokens.
  std::span<const int32_t> prompt_token_ids;
  std::span<const int32_t> output_token_ids;
  // Structured outputs: bit t of word t / 32 set = token t may be sampled (the others get -inf
  // after the logits processors); empty: every token may. If the processors leave no allowed
  // token finite (min_tokens holding back the only allowed stop tokens), the allowed tokens
  // keep their raw logits; if none is allowed at all, the mask is not applied.
  std::span<const uint32_t> allowed_tokens;
};

class Sampler {
 public:
  // The shared generator (for requests without a seed) seeded from std::random_device.
  Sampler();
  explicit Sampler(uint64_t shared_seed);

  // logits: f32 [num_rows, vocab] with unit stride along vocab; rows[i] describes row i.
  // Returns one token id per row. Random numbers are drawn in row order before any work, so
  // the result does not depend on `pool` (rows run in parallel on it when given).
  std::vector<int32_t> sample(const Tensor& logits, std::span<const SamplingRow> rows,
                              ThreadPool* pool = nullptr);

 private:
  std::mt19937_64 shared_generator_;
  int64_t num_calls_ = 0;  // sample() calls so far (test fault injection counts them)
};

// Structured outputs' mask (SamplingRow::allowed_tokens) on a processed copy `logits` of the
// row `raw`, [vocab] each: tokens not allowed get -inf; see SamplingRow for the fallbacks.
void apply_token_mask(std::span<const float> raw, std::span<const uint32_t> mask,
                      std::span<float> logits);

// A uniform double in [0, 1) from exactly one generator call (53 random bits), the same on
// every platform (std::uniform_real_distribution is not).
double uniform_variate(std::mt19937_64& generator);

// Argmax of one row; ties go to the lowest id. Throws for NaN / +inf or no finite logit.
int32_t greedy_token(std::span<const float> logits);

// A kept token and its probability after temperature, min-p, top-k and top-p.
struct TokenProbability {
  int32_t token;
  double probability;
};

// The distribution one row is sampled from: the kept tokens with a finite logit, in ascending
// id order (the inverse-CDF order), probabilities summing to 1. Greedy params give the greedy
// token with probability 1.
std::vector<TokenProbability> sampling_distribution(std::span<const float> logits,
                                                    const SamplingParams& params);

// The token sample() picks for one row given its uniform variate u in [0, 1).
int32_t sample_token(std::span<const float> logits, const SamplingParams& params, double u);

// Plain scalar versions of the above in double precision with full sorts: the oracle the
// optimized ones are tested against. Same contracts.
namespace reference {
std::vector<TokenProbability> sampling_distribution(std::span<const float> logits,
                                                    const SamplingParams& params);
int32_t sample_token(std::span<const float> logits, const SamplingParams& params, double u);
}  // namespace reference

}  // namespace ctxpar::engine
