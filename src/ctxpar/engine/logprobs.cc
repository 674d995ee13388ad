#include "ctxpar/engine/logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ctxpar/core/error.h"

namespace ctxpar::engine {

SampledLogprobs token_logprobs(std::span<const float> logits, int32_t token, int32_t num_top) {
  const auto vocab = static_cast<int64_t>(logits.size());
  CTXPAR_CHECK(token >= 0 && token < vocab, "token {} is outside the vocabulary [0, {})", token,
               vocab);
  CTXPAR_CHECK(num_top >= 0 && num_top <= vocab, "{} top logprobs asked of a vocabulary of {}",
               num_top, vocab);
  // log_softmax(l)_v = l_v - (m + log Σ exp(l - m)), m the largest logit, summed in double.
  const float m = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (const float l : logits) sum += std::exp(static_cast<double>(l) - m);
  const double log_z = m + std::log(sum);
  const auto logprob = [&](int32_t v) {
    return static_cast<float>(static_cast<double>(logits[static_cast<size_t>(v)]) - log_z);
  };

  SampledLogprobs out;
  out.sampled = {token, logprob(token)};
  const float own = logits[static_cast<size_t>(token)];
  out.rank = 1 + std::count_if(logits.begin(), logits.end(), [&](float l) { return l > own; });
  if (num_top == 0) return out;
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  std::iota(ids.begin(), ids.end(), 0);
  const auto before = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  };
  std::partial_sort(ids.begin(), ids.begin() + num_top, ids.end(), before);
  out.top.reserve(static_cast<size_t>(num_top));
  for (int32_t i = 0; i < num_top; ++i)
    out.top.push_back({ids[static_cast<size_t>(i)], logprob(ids[static_cast<size_t>(i)])});
  return out;
}

}  // namespace ctxpar::engine
