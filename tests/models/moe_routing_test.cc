// The MoE router against a plain double-precision statement of DeepSeek's rules, on random
// gate logits: softmax greedy (V2), group-limited greedy, and sigmoid noaux_tc with the
// correction bias used only to choose (V3).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "ctxpar/core/error.h"
#include "ctxpar/model/layers/moe.h"
#include "support/seeded_rng.h"

namespace ctxpar::model {
namespace {

TEST(MoeRouting, MatchesTheRulesOnRandomLogits) {
  const auto seed = test_support::test_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  std::normal_distribution<float> g;
  for (int trial = 0; trial < 300; ++trial) {
    MoeConfig moe;
    moe.n_routed_experts = std::vector<int64_t>{4, 6, 8, 12}[rng() % 4];
    moe.num_experts_per_tok = 1 + static_cast<int64_t>(rng() % 3);
    const int kind = static_cast<int>(rng() % 3);
    moe.scoring_func = kind == 2 ? ScoringFunc::kSigmoid : ScoringFunc::kSoftmax;
    moe.topk_method = kind == 0   ? TopkMethod::kGreedy
                      : kind == 1 ? TopkMethod::kGroupLimitedGreedy
                                  : TopkMethod::kNoauxTc;
    moe.n_group = kind == 0 ? 1 : 2;
    moe.topk_group = 1;
    moe.norm_topk_prob = rng() % 2;
    moe.routed_scaling_factor = 0.5 + (rng() % 5);
    // Group-limited routing keeps one group of E/2 experts: k must fit in it.
    if (kind != 0)
      moe.num_experts_per_tok = std::min(moe.num_experts_per_tok, moe.n_routed_experts / 2);
    const int64_t e = moe.n_routed_experts, k = moe.num_experts_per_tok, tokens = 5;
    Tensor logits = Tensor::empty({tokens, e}, DType::kF32);
    for (int64_t i = 0; i < logits.numel(); ++i) logits.data<float>()[i] = 2 * g(rng);
    Tensor bias;
    if (kind == 2) {
      bias = Tensor::empty({e}, DType::kF32);
      for (int64_t i = 0; i < e; ++i) bias.data<float>()[i] = g(rng);
    }
    const Routing r = route_tokens(logits, moe, bias);
    for (int64_t t = 0; t < tokens; ++t) {
      std::vector<double> s(static_cast<size_t>(e)), c(static_cast<size_t>(e));
      double mx = -1e300, z = 0;
      for (int64_t i = 0; i < e; ++i) mx = std::max(mx, double(logits.data<float>()[t * e + i]));
      for (int64_t i = 0; i < e; ++i) {
        const double l = logits.data<float>()[t * e + i];
        s[i] = kind == 2 ? 1 / (1 + std::exp(-l)) : std::exp(l - mx);
        z += s[i];
      }
      for (int64_t i = 0; i < e; ++i) {
        if (kind != 2) s[i] /= z;
        c[i] = s[i] + (kind == 2 ? bias.data<float>()[i] : 0.0);
      }
      // Allowed experts: all, or the best group by max (kind 1) / sum of top two (kind 2).
      std::set<int64_t> allowed;
      if (kind == 0) {
        for (int64_t i = 0; i < e; ++i) allowed.insert(i);
      } else {
        const int64_t per = e / 2;
        double best = -1e300;
        int64_t best_g = 0;
        for (int64_t gi = 0; gi < 2; ++gi) {
          std::vector<double> m(c.begin() + gi * per, c.begin() + (gi + 1) * per);
          std::sort(m.rbegin(), m.rend());
          const double score = kind == 1 ? m[0] : m[0] + m[1];
          if (score > best) best = score, best_g = gi;
        }
        for (int64_t i = best_g * per; i < (best_g + 1) * per; ++i) allowed.insert(i);
      }
      std::vector<int64_t> order(allowed.begin(), allowed.end());
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return c[a] > c[b]; });
      double sum = 0;
      for (int64_t j = 0; j < k; ++j) sum += s[order[j]];
      for (int64_t j = 0; j < k; ++j) {
        EXPECT_EQ(r.experts.data<int32_t>()[t * k + j], order[j]);
        double w = s[order[j]];
        if (moe.norm_topk_prob && k > 1) w /= sum;
        EXPECT_NEAR(r.weights.data<float>()[t * k + j], w * moe.routed_scaling_factor,
                    1e-5 * (1 + w * moe.routed_scaling_factor));
      }
    }
  }
}

TEST(MoeRouting, RejectsMoreExpertsPerTokenThanTheKeptGroupsHold) {
  MoeConfig moe;
  moe.n_routed_experts = 8;
  moe.num_experts_per_tok = 5;
  moe.topk_method = TopkMethod::kNoauxTc;
  moe.scoring_func = ScoringFunc::kSigmoid;
  moe.n_group = 4;
  moe.topk_group = 2;  // 2 groups of 2 experts: at most 4 per token
  EXPECT_THROW(route_tokens(Tensor::zeros({1, 8}, DType::kF32), moe, Tensor()), Error);
}

}  // namespace
}  // namespace ctxpar::model
