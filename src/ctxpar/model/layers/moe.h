// DeepSeek mixture of experts: a router picks num_experts_per_tok routed experts per token,
// their outputs are weighted and summed with the shared experts'. Every expert is a GatedMlp
// sharded over TP along its intermediate dim, so the routed and shared partial outputs are
// summed locally and reduced over TP once.
#pragma once

#include <memory>
#include <vector>

#include "ctxpar/model/layers/mlp.h"
#include "ctxpar/model/model_config.h"

namespace ctxpar::model {

// Routing decision for a batch: experts [tokens, k] i32 and weights [tokens, k] f32.
struct Routing {
  Tensor experts;
  Tensor weights;
};

// The router in isolation (exposed for tests): gate logits [tokens, E] f32 → routing, as
// DeepSeek V2 (softmax; greedy or group-limited) and V3 (sigmoid, noaux_tc with the score
// correction bias used only to choose) do it. correction_bias: [E] or undefined.
Routing route_tokens(const Tensor& gate_logits, const MoeConfig& moe,
                     const Tensor& correction_bias);

class MoeLayer {
 public:
  MoeLayer(const ModelContext& ctx, const ModelConfig& config, int64_t layer);
  // x [tokens, hidden] → [tokens, hidden], all-reduced.
  Tensor forward(const Tensor& x) const;
  // This rank's partial output (routed and shared experts' sum before the TP sum).
  Tensor forward_partial(const Tensor& x) const;

 private:
  ModelContext ctx_;
  MoeConfig moe_;
  kernels::Linear gate_;    // [E, hidden], replicated, f32 (routing is precision-sensitive)
  Tensor correction_bias_;  // [E] f32 (noaux_tc) or undefined
  std::vector<std::unique_ptr<GatedMlp>> experts_;
  std::unique_ptr<GatedMlp> shared_;  // null when n_shared_experts == 0
};

}  // namespace ctxpar::model
