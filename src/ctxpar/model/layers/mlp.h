// Gated MLP: down(silu(gate(x)) · up(x)), gate/up column-parallel (fused into one GEMM) and
// down row-parallel. Also the building block of every MoE expert and shared expert.
#pragma once

#include <string>

#include "ctxpar/model/layers/parallel_linear.h"

namespace ctxpar::model {

class GatedMlp {
 public:
  // prefix: e.g. "model.layers.3.mlp" or "...mlp.experts.5"; weights prefix.{gate,up,down}_proj.
  GatedMlp(const ModelContext& ctx, const std::string& prefix, int64_t hidden, int64_t intermediate,
           bool bias);
  // x [tokens, hidden] → [tokens, hidden]: the all-reduced output.
  Tensor forward(const Tensor& x) const;
  // This rank's partial output (before the TP sum), for summing several MLPs first.
  Tensor forward_partial(const Tensor& x) const;
  const RowParallelLinear& down() const { return down_; }

 private:
  ColumnParallelLinear gate_up_;  // [2·I / T, hidden]: this rank's gate rows then up rows
  RowParallelLinear down_;
  ThreadPool* pool_;  // the rank's, for the activation over a prefill's rows
};

}  // namespace ctxpar::model
