#include "ctxpar/model/layers/moe.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ctxpar/core/error.h"

namespace ctxpar::model {
namespace {

// Indices of the k largest values, ties to the lower index.
std::vector<int64_t> top_indices(const std::vector<double>& v, int64_t k) {
  std::vector<int64_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return v[a] > v[b]; });
  idx.resize(static_cast<size_t>(std::min<int64_t>(k, static_cast<int64_t>(v.size()))));
  return idx;
}

}  // namespace

Routing route_tokens(const Tensor& gate_logits, const MoeConfig& moe,
                     const Tensor& correction_bias) {
  const int64_t tokens = gate_logits.size(0), e = gate_logits.size(1);
  const int64_t k = moe.num_experts_per_tok;
  CTXPAR_CHECK(k >= 1 && k <= e, "num_experts_per_tok {} must be in [1, {}]", k, e);
  Routing r{Tensor::empty({tokens, k}, DType::kI32), Tensor::empty({tokens, k}, DType::kF32)};
  const Tensor logits = gate_logits.contiguous();
  const int64_t groups = moe.n_group > 0 ? moe.n_group : 1;
  CTXPAR_CHECK(e % groups == 0, "n_group {} does not divide the {} routed experts", groups, e);
  const int64_t per_group = e / groups;
  if (moe.topk_method != TopkMethod::kGreedy && groups > 1) {
    CTXPAR_CHECK(k <= moe.topk_group * per_group,
                 "num_experts_per_tok {} exceeds the {} experts of the topk_group {} groups kept "
                 "(n_group {}, {} experts each)",
                 k, moe.topk_group * per_group, moe.topk_group, groups, per_group);
  }
  for (int64_t t = 0; t < tokens; ++t) {
    const float* l = logits.data<float>() + t * e;
    std::vector<double> score(static_cast<size_t>(e));
    if (moe.scoring_func == ScoringFunc::kSoftmax) {
      const double mx = *std::max_element(l, l + e);
      double sum = 0;
      for (int64_t i = 0; i < e; ++i) sum += score[i] = std::exp(static_cast<double>(l[i]) - mx);
      for (double& s : score) s /= sum;
    } else {
      for (int64_t i = 0; i < e; ++i) score[i] = 1.0 / (1.0 + std::exp(-static_cast<double>(l[i])));
    }
    // Choice scores: with noaux_tc the correction bias shifts the choice, not the weights.
    std::vector<double> choice = score;
    if (correction_bias.defined()) {
      for (int64_t i = 0; i < e; ++i) choice[i] += correction_bias.data<float>()[i];
    }
    if (moe.topk_method != TopkMethod::kGreedy && groups > 1) {
      // Group score: best expert (group_limited_greedy) or sum of the best two (noaux_tc).
      std::vector<double> group_score(static_cast<size_t>(groups));
      for (int64_t g = 0; g < groups; ++g) {
        std::vector<double> members(choice.begin() + g * per_group,
                                    choice.begin() + (g + 1) * per_group);
        std::sort(members.rbegin(), members.rend());
        group_score[g] = moe.topk_method == TopkMethod::kNoauxTc
                             ? members[0] + (per_group > 1 ? members[1] : 0.0)
                             : members[0];
      }
      std::vector<bool> keep(static_cast<size_t>(groups), false);
      for (int64_t g : top_indices(group_score, moe.topk_group)) keep[g] = true;
      for (int64_t i = 0; i < e; ++i) {
        if (!keep[i / per_group]) choice[i] = -INFINITY;
      }
    }
    const std::vector<int64_t> chosen = top_indices(choice, k);
    double sum = 0;
    for (int64_t i : chosen) sum += score[i];
    for (int64_t j = 0; j < k; ++j) {
      double w = score[chosen[j]];
      if (moe.norm_topk_prob && k > 1) w /= sum + 1e-20;
      r.experts.data<int32_t>()[t * k + j] = static_cast<int32_t>(chosen[j]);
      r.weights.data<float>()[t * k + j] = static_cast<float>(w * moe.routed_scaling_factor);
    }
  }
  return r;
}

MoeLayer::MoeLayer(const ModelContext& ctx, const ModelConfig& config, int64_t layer)
    : ctx_(ctx), moe_(config.moe), gate_([&] {
        const std::string prefix = fmt::format("model.layers.{}.mlp.gate", layer);
        return kernels::Linear(ctx.load(prefix + ".weight",
                                        {config.moe.n_routed_experts, config.hidden_size},
                                        Slice::full(), DType::kF32));
      }()) {
  const std::string prefix = fmt::format("model.layers.{}.mlp", layer);
  if (moe_.topk_method == TopkMethod::kNoauxTc) {
    correction_bias_ = ctx.load(prefix + ".gate.e_score_correction_bias", {moe_.n_routed_experts},
                                Slice::full(), DType::kF32);
  }
  for (int64_t e = 0; e < moe_.n_routed_experts; ++e) {
    experts_.push_back(std::make_unique<GatedMlp>(ctx, fmt::format("{}.experts.{}", prefix, e),
                                                  config.hidden_size, moe_.moe_intermediate_size,
                                                  false));
  }
  if (moe_.n_shared_experts > 0) {
    shared_ = std::make_unique<GatedMlp>(ctx, prefix + ".shared_experts", config.hidden_size,
                                         moe_.moe_intermediate_size * moe_.n_shared_experts, false);
  }
}

Tensor MoeLayer::forward(const Tensor& x) const {
  Tensor out = forward_partial(x);
  if (ctx_.tp_size() > 1) ctx_.groups.tp().all_reduce(out);
  return out;
}

Tensor MoeLayer::forward_partial(const Tensor& x) const {
  const int64_t tokens = x.size(0), hidden = x.size(1), k = moe_.num_experts_per_tok;
  const Routing routing = route_tokens(gate_.forward(x, ctx_.pool), moe_, correction_bias_);
  Tensor out = shared_ ? shared_->forward_partial(x) : Tensor::zeros({tokens, hidden}, DType::kF32);
  // Group tokens by expert so each expert runs one GEMM over its tokens.
  std::vector<std::vector<std::pair<int64_t, float>>> assigned(experts_.size());
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t j = 0; j < k; ++j) {
      assigned[routing.experts.data<int32_t>()[t * k + j]].emplace_back(
          t, routing.weights.data<float>()[t * k + j]);
    }
  }
  float* o = out.data<float>();
  for (size_t e = 0; e < experts_.size(); ++e) {
    if (assigned[e].empty()) continue;
    const auto n = static_cast<int64_t>(assigned[e].size());
    Tensor xe = Tensor::empty({n, hidden}, DType::kF32);
    for (int64_t i = 0; i < n; ++i) xe.select(0, i).copy_from(x.select(0, assigned[e][i].first));
    const Tensor ye = experts_[e]->forward_partial(xe);
    for (int64_t i = 0; i < n; ++i) {
      const float w = assigned[e][i].second;
      const float* y = ye.data<float>() + i * hidden;
      float* dst = o + assigned[e][i].first * hidden;
      for (int64_t c = 0; c < hidden; ++c) dst[c] += w * y[c];
    }
  }
  return out;
}

}  // namespace ctxpar::model
