// ModelLinear: a linear layer's weights as the model keeps them — dense (kernels::Linear, f32
// or bf16) or FP8 (kernels::Fp8Linear, block or per-row scales) — and the one place that
// chooses between them (load_model_linear). The tensor-parallel linears (parallel_linear.h)
// hold one.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "ctxpar/kernels/linear.h"
#include "ctxpar/kernels/linear_fp8.h"
#include "ctxpar/model/layers/model_context.h"

namespace ctxpar::model {

// One HF tensor's contribution to a (possibly fused) linear weight: `slice` of `name` (full
// shape [out, in]); bias from `bias_name` if not empty (sliced like the rows when the slice
// splits dim 0, whole otherwise).
struct LinearPart {
  std::string name;       // e.g. "model.layers.0.self_attn.q_proj.weight"
  Shape full_shape;       // [out, in]
  Slice slice;            // which rows (dim 0) or columns (dim 1) this rank holds
  std::string bias_name;  // e.g. "...q_proj.bias", or empty
};

class ModelLinear {
 public:
  explicit ModelLinear(kernels::Linear dense) : impl_(std::move(dense)) {}
  explicit ModelLinear(kernels::Fp8Linear fp8) : impl_(std::move(fp8)) {}

  // x [tokens, in] f32 → y [tokens, out] f32 (see kernels::Linear / kernels::Fp8Linear).
  void forward(const Tensor& x, Tensor& y, ThreadPool& pool) const;
  // Same, returning a new contiguous y [tokens, out] f32.
  Tensor forward(const Tensor& x, ThreadPool& pool) const;
  // On the calling thread only.
  Tensor forward(const Tensor& x) const;
  int64_t in_features() const;
  int64_t out_features() const;
  bool is_fp8() const { return std::holds_alternative<kernels::Fp8Linear>(impl_); }

 private:
  std::variant<kernels::Linear, kernels::Fp8Linear> impl_;
};

// The parts stacked along the output rows into one linear (every part has the same input
// width; a single part may be a column slice, as a row-parallel weight). FP8 when every part
// is kept FP8 (ModelContext::keeps_fp8) with one scaling and, for block scales with several
// parts, each part but the last has a whole number of 128-row blocks, so the scales stack too: the
// activations then follow options.weight_dtype (bf16: rounded to bf16). Dense in
// options.weight_dtype otherwise (FP8 parts dequantized). Biases are f32. `bias_once`: a
// row-parallel bias, added by TP rank 0 only, before the sum over ranks.
ModelLinear load_model_linear(const ModelContext& ctx, const std::vector<LinearPart>& parts,
                              bool bias_once = false);

}  // namespace ctxpar::model
