// Logprobs: the log-softmax over the whole vocabulary of the raw logits, the sampled token's
// rank, and the top tokens in order, against a double-precision computation with a full sort.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/engine/logprobs.h"
#include "support/seeded_rng.h"

namespace ctxpar::engine {
namespace {

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

TEST(Logprobs, LogSoftmaxRankAndTopMatchAFullSort) {
  SEEDED_RNG(rng);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t vocab = uniform(rng, 1, trial % 10 == 0 ? 40000 : 500);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (float& l : logits) l = normal(rng);
    if (trial % 3 == 0) {  // ties
      for (float& l : logits) l = std::round(l);
    }
    for (int64_t m = uniform(rng, 0, vocab / 4); m > 0; --m) {
      logits[size_t(uniform(rng, 1, vocab - 1))] = -std::numeric_limits<float>::infinity();
    }
    const auto token = static_cast<int32_t>(uniform(rng, 0, vocab - 1));
    // Mostly vLLM's range (one pass keeps the best); sometimes up to the whole row (sorted).
    const auto num_top = static_cast<int32_t>(
        uniform(rng, 0, trial % 4 == 0 ? vocab : std::min<int64_t>(vocab, 20)));
    const SampledLogprobs got = token_logprobs(logits, token, num_top);

    double max = -INFINITY;
    for (float l : logits) max = std::max(max, double(l));
    double z = 0;
    for (float l : logits) z += std::exp(double(l) - max);
    const auto logprob = [&](int32_t v) { return double(logits[size_t(v)]) - max - std::log(z); };
    std::vector<int32_t> order(static_cast<size_t>(vocab));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
    EXPECT_EQ(got.sampled.token, token);
    if (std::isinf(logits[size_t(token)])) {
      EXPECT_EQ(got.sampled.logprob, -std::numeric_limits<float>::infinity());
    } else {
      EXPECT_NEAR(got.sampled.logprob, logprob(token), 1e-4);
    }
    const auto first_equal = std::find_if(order.begin(), order.end(), [&](int32_t v) {
      return logits[size_t(v)] == logits[size_t(token)];
    });
    EXPECT_EQ(got.rank, 1 + (first_equal - order.begin()));
    ASSERT_EQ(got.top.size(), static_cast<size_t>(num_top));
    for (int32_t i = 0; i < num_top; ++i) {
      EXPECT_EQ(got.top[size_t(i)].token, order[size_t(i)]) << "rank " << i;
      if (!std::isinf(logits[size_t(order[size_t(i)])])) {
        EXPECT_NEAR(got.top[size_t(i)].logprob, logprob(order[size_t(i)]), 1e-4);
      }
    }
  }
}

TEST(Logprobs, RejectsTokensAndCountsOutsideTheRow) {
  const std::vector<float> logits = {0.5f, 1.0f, -2.0f};
  EXPECT_THROW(token_logprobs(logits, 3, 0), Error);
  EXPECT_THROW(token_logprobs(logits, -1, 0), Error);
  EXPECT_THROW(token_logprobs(logits, 0, 4), Error);
  const SampledLogprobs all = token_logprobs(logits, 2, 3);
  double total = 0;
  for (const auto& t : all.top) total += std::exp(double(t.logprob));
  EXPECT_NEAR(total, 1.0, 1e-6);
  EXPECT_EQ(all.rank, 3);
}

}  // namespace
}  // namespace ctxpar::engine
