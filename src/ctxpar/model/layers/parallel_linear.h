// Tensor-parallel linears (y = x·Wᵀ + b, W [out, in] as in HF checkpoints).
//  - ColumnParallel: each rank holds a block of output rows; outputs stay sharded.
//  - RowParallel: each rank holds a block of input columns; partial outputs are summed over
//    the TP group (all-reduce), the bias added once.
//  - Replicated: every rank holds the whole weight.
// Several HF weights feeding the same input (q/k/v, gate/up) can be fused into one column-
// parallel weight by passing several parts: one GEMM, one persistent copy. The weights are
// dense or FP8 as load_model_linear (model_linear.h) decides.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ctxpar/model/layers/model_linear.h"

namespace ctxpar::model {

class ColumnParallelLinear {
 public:
  ColumnParallelLinear(const ModelContext& ctx, const std::vector<LinearPart>& parts);
  // x [tokens, in] f32 → [tokens, sum of part rows] f32 (this rank's outputs).
  Tensor forward(const Tensor& x) const;
  int64_t out_features() const { return linear_.out_features(); }

 private:
  ModelContext ctx_;
  ModelLinear linear_;
};

class RowParallelLinear {
 public:
  // weight full [out, in]; this rank holds columns part(1, tp_rank, T). bias_name may be empty.
  RowParallelLinear(const ModelContext& ctx, const std::string& name, const Shape& full_shape,
                    const std::string& bias_name);
  // x [tokens, in / T] (this rank's inputs) → [tokens, out], summed over the TP group.
  Tensor forward(const Tensor& x) const;
  // The partial product without the reduction, for callers that sum several partials first.
  Tensor forward_partial(const Tensor& x) const;
  void reduce(Tensor& partial) const;

 private:
  ModelContext ctx_;  // references only; cheap to hold by value
  ModelLinear linear_;
};

// Loads a full (replicated) weight [out, in].
ModelLinear load_replicated_linear(const ModelContext& ctx, const std::string& name,
                                   const Shape& full_shape, const std::string& bias_name = "");

}  // namespace ctxpar::model
