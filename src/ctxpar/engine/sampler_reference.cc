// The sampler's oracle: every step done the obvious way, in double, with a full sort.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ctxpar/core/error.h"
#include "ctxpar/engine/sampler.h"

namespace ctxpar::engine::reference {
namespace {

// Kept tokens (ascending id) with unnormalized weights.
std::vector<TokenProbability> kept_weights(std::span<const float> logits,
                                           const SamplingParams& params) {
  params.validate();
  greedy_token(logits);  // only for its checks of the logits

  const auto vocab = static_cast<int64_t>(logits.size());
  std::vector<int32_t> ranked(static_cast<size_t>(vocab));
  std::iota(ranked.begin(), ranked.end(), 0);
  std::sort(ranked.begin(), ranked.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  if (params.is_greedy()) return {{ranked[0], 1.0}};
  const double max_logit = logits[ranked[0]];
  const auto weight = [&](int32_t v) {
    return std::exp((static_cast<double>(logits[v]) - max_logit) / params.temperature);
  };

  // min-p drops tokens first; they keep their rank but weigh nothing.
  const auto passes_min_p = [&](int32_t v) { return weight(v) >= params.min_p; };
  const auto kept_weight = [&](int32_t v) { return passes_min_p(v) ? weight(v) : 0.0; };
  int64_t keep = vocab;
  if (params.top_k > 0 && params.top_k < vocab) keep = params.top_k;
  if (params.top_p < 1.0f) {
    double total = 0.0;
    for (int64_t i = 0; i < keep; ++i) total += kept_weight(ranked[i]);
    double mass = 0.0;
    for (int64_t i = 0; i < keep; ++i) {
      mass += kept_weight(ranked[i]);
      if (mass >= params.top_p * total) {
        keep = i + 1;
        break;
      }
    }
  }
  std::vector<TokenProbability> kept;
  for (int64_t i = 0; i < keep; ++i) {
    const int32_t v = ranked[i];
    if (logits[v] != -std::numeric_limits<float>::infinity() && passes_min_p(v)) {
      kept.push_back({v, weight(v)});
    }
  }
  std::sort(kept.begin(), kept.end(),
            [](const TokenProbability& a, const TokenProbability& b) { return a.token < b.token; });
  return kept;
}

}  // namespace

std::vector<TokenProbability> sampling_distribution(std::span<const float> logits,
                                                    const SamplingParams& params) {
  std::vector<TokenProbability> kept = kept_weights(logits, params);
  double total = 0.0;
  for (const TokenProbability& t : kept) total += t.probability;
  for (TokenProbability& t : kept) t.probability /= total;
  return kept;
}

int32_t sample_token(std::span<const float> logits, const SamplingParams& params, double u) {
  CTXPAR_CHECK(u >= 0.0 && u < 1.0, "uniform variate {} is outside [0, 1)", u);
  const std::vector<TokenProbability> kept = kept_weights(logits, params);
  double total = 0.0;
  for (const TokenProbability& t : kept) total += t.probability;
  double cumulative = 0.0;
  int32_t last_positive = -1;
  for (const TokenProbability& t : kept) {
    if (t.probability <= 0.0) continue;
    cumulative += t.probability;
    last_positive = t.token;
    if (cumulative > u * total) return t.token;
  }
  return last_positive;
}

}  // namespace ctxpar::engine::reference
