// Batched matrix product c[b] = a[b] · w[b] over strided views, through oneDNN. Used where a
// weight is applied per head (MLA's absorbed W_UK and W_UV are per-head slices of kv_b_proj
// read in place, so no transposed copy of the weight is kept).
#pragma once

#include "ctxpar/core/tensor.h"
#include "ctxpar/core/thread_pool.h"

namespace ctxpar::kernels {

// a: [batch, M, K] f32, w: [batch, K, N] f32 or bf16, c: [batch, M, N] f32. Any strides
// (views of larger tensors are the point); c must not alias a or w. With bf16 w, a is
// rounded to bf16 and products accumulate in f32 (as the bf16 Linear does).
// A bf16 w with M <= 8 (decode) and one unit-stride dimension (w.stride(1) == 1 or
// w.stride(2) == 1, a and c with unit-stride last dims) runs ctxpar's GEMVs, which stream w
// once; other products run oneDNN (which, without bf16 dot products, converts w to f32 per
// call). Runs single-threaded on the calling thread; the overload with a pool splits the batch
// (or, for a batch smaller than the pool, the N columns) over its threads.
void batched_matmul(const Tensor& a, const Tensor& w, Tensor& c);
void batched_matmul(const Tensor& a, const Tensor& w, Tensor& c, ThreadPool& pool);

// Double-precision reference of the same product (w read as stored; a rounded to bf16
// first when w is bf16).
void batched_matmul_reference(const Tensor& a, const Tensor& w, Tensor& c);

}  // namespace ctxpar::kernels
