// Gated activations of the MLP: the gate_up projection's output [tokens, 2·I] holds the gate
// in its first half and the up projection in its second (HF's merged gate_up_proj order).
#pragma once

#include "ctxpar/core/tensor.h"
#include "ctxpar/core/thread_pool.h"

namespace ctxpar::kernels {

// y[t, i] = silu(x[t, i]) · x[t, I + i], silu(a) = a / (1 + e^−a).
// x [tokens, 2·I] f32, y [tokens, I] f32 preallocated; last dims contiguous, rows may be
// strided. y may be the view x[:, 0:I] (in place over the gate half). With a pool, the rows
// of a prefill are split over its threads.
void silu_and_mul(const Tensor& x, Tensor& y, ThreadPool* pool = nullptr);

// Same in double.
void silu_and_mul_reference(const Tensor& x, Tensor& y);

}  // namespace ctxpar::kernels
