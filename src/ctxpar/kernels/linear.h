// Dense linear layer y = x · Wᵀ (+ bias) on oneDNN, with f32 or bf16 weights.
//
// Weight memory: a Linear keeps the Tensor it was given (sharing its storage; a wrapped or
// mmap'd checkpoint stays where it is) and never copies or reorders it. oneDNN reads W [out, in]
// in place as the transposed operand, so the given tensor is the one persistent copy, and a
// Linear built over a reusable buffer sees whatever was written there last (the DSA-CP o_proj
// path relies on this).
//
// Decode (tokens <= 8) runs ctxpar's GEMV (linear_gemv.h) for both dtypes: one pass over the
// weight rows, which is what bounds a decode step.
//
// Numerics:
//   f32 W:  f32 products, f32 accumulation (oneDNN sgemm, or the GEMV).
//   bf16 W: x is rounded to bf16 first, products of the bf16 values are accumulated in f32.
//           Prefill (linear_gemm.h bf16_gemm): CPUs with fast bf16 dot products (AVX-512
//           BF16) run oneDNN's bf16 matmul; AVX2 runs ctxpar's own GEMM, which converts the
//           weights while packing them; the rest convert weight tiles to f32 and run oneDNN's
//           sgemm (the same math; oneDNN's emulated bf16 matmul is ~4× slower than its sgemm
//           there).
//
// Threads: one runtime, the ThreadPool passed to forward (or the calling thread when none
// is). Output columns are split over the pool; oneDNN runs single-threaded inside each task
// and never starts an OpenMP team.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "ctxpar/core/tensor.h"
#include "ctxpar/core/thread_pool.h"

namespace ctxpar::kernels {

class Linear {
 public:
  // weight [out, in] f32 or bf16 (HF layout), last dim contiguous (rows may be strided);
  // bias [out] f32, optional. Throws Error on any other dtype or shape.
  explicit Linear(Tensor weight, std::optional<Tensor> bias = std::nullopt);
  ~Linear();
  Linear(Linear&&) noexcept;
  Linear& operator=(Linear&&) noexcept;

  // x [tokens, in] f32, last dim contiguous (rows may be strided, e.g. a column slice of a
  // wider activation); y [tokens, out] f32, last dim contiguous, preallocated by the caller and
  // not overlapping x. tokens may be 0.
  //
  // Thread safety: forward may run concurrently on one object from several threads. oneDNN
  // primitives are built once per (tokens, row strides) and kept in a small per-object LRU
  // cache behind a mutex; per-call scratch (x converted for bf16 weights, one chunk of at most
  // 256 tokens at a time) lives in thread-local buffers of the calling thread.
  void forward(const Tensor& x, Tensor& y) const;
  // Same, with ctxpar's own kernels (if this CPU needs them) split over `pool`. The pool is
  // not used reentrantly: do not call this from inside one of its tasks.
  void forward(const Tensor& x, Tensor& y, ThreadPool& pool) const;
  // Same, returning a new contiguous y [tokens, out] f32.
  Tensor forward(const Tensor& x) const;
  Tensor forward(const Tensor& x, ThreadPool& pool) const;

  int64_t in_features() const;
  int64_t out_features() const;
  const Tensor& weight() const;  // [out, in], exactly the tensor given
  const std::optional<Tensor>& bias() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Plain double-precision reference: y[t, o] = Σ_i x[t, i]·w[o, i] (+ bias[o]), products and
// sums in double from the stored values (x is NOT rounded to bf16 here; round it first to
// compare against a bf16-weight Linear tightly). x [tokens, in] f32, w [out, in] f32|bf16,
// bias [out] f32 or null, y [tokens, out] f32.
void linear_reference(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y);

}  // namespace ctxpar::kernels
