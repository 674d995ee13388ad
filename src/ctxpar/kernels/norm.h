// Row normalizations over the last dim: RMSNorm (optionally fused with the residual add) and
// LayerNorm. Every function works on x [..., d] f32 whose last dim is contiguous; the leading
// dims may have any strides (e.g. [tokens, heads, head_dim] views for per-head q/k norms).
// Outputs are preallocated by the caller with the same shape (any leading strides) and may be
// the input itself (in place). Statistics accumulate in f32 over 8 partial sums.
#pragma once

#include "ctxpar/core/tensor.h"

namespace ctxpar::kernels {

// y = x / sqrt(mean(x²) + eps) · weight.   weight [d] f32 or bf16.
void rms_norm(const Tensor& x, const Tensor& weight, float eps, Tensor& y);

// residual += x, then y = rms_norm(residual). residual, x, y [..., d] f32; residual is updated
// in place (the new residual stream); y may alias x but not residual.
void add_rms_norm(Tensor& residual, const Tensor& x, const Tensor& weight, float eps, Tensor& y);

// y = (x - mean) / sqrt(var + eps) · weight + bias, var the biased (1/d) variance.
// weight, bias [d] f32 or bf16.
void layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps, Tensor& y);

// Double-precision references with the same contracts (y f32).
void rms_norm_reference(const Tensor& x, const Tensor& weight, double eps, Tensor& y);
void layer_norm_reference(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps,
                          Tensor& y);

}  // namespace ctxpar::kernels
