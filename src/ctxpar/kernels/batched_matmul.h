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
// Runs single-threaded on the calling thread; the overload with a pool splits the batch (or,
// for a batch smaller than the pool, the N columns) over its threads.
void batched_matmul(const Tensor& a, const Tensor& w, Tensor& c);
void batched_matmul(const Tensor& a, const Tensor& w, Tensor& c, ThreadPool& pool);

// A weight that batched_matmul applies on every step (MLA's kv_b_proj), stored as the product
// runs it: bf16 stays bf16 where oneDNN has bf16 dot products; elsewhere it becomes an f32
// copy (exact; twice the bytes), since oneDNN would otherwise convert the whole bf16 weight to
// f32 on every call (two per layer per decode step). With the f32 copy, a is not rounded to
// bf16 (see above): the products are those of the bf16 weight with unrounded activations.
Tensor batched_matmul_weight(Tensor w);

// Double-precision reference of the same product (w read as stored; a rounded to bf16
// first when w is bf16).
void batched_matmul_reference(const Tensor& a, const Tensor& w, Tensor& c);

}  // namespace ctxpar::kernels
