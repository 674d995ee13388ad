// FullWeightWorkspace: one rank's reusable buffers for full (unsharded) weights, shared by
// every layer of its model (DESIGN.md §4 "DSA-CP and the o_proj path"). DSA-CP prefill
// all-gathers one layer's TP-sharded o_proj at a time into them, runs it, and moves on to
// the next layer, which overwrites them.
//
// Memory: the buffers grow to the largest request once (normally the first prefill step)
// and are reused after that; they hold the last gathered layer's weight and nothing else,
// so the sharded weights stay the only persistent copy of each layer's o_proj.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ctxpar/core/tensor.h"
#include "ctxpar/kernels/linear.h"
#include "ctxpar/kernels/linear_int8.h"

namespace ctxpar::model {

class FullWeightWorkspace {
 public:
  FullWeightWorkspace();
  ~FullWeightWorkspace();
  FullWeightWorkspace(const FullWeightWorkspace&) = delete;
  FullWeightWorkspace& operator=(const FullWeightWorkspace&) = delete;

  // The weight buffer as a contiguous [rows, cols] tensor of dtype (f32, bf16 or i8); the
  // vector buffers (slot kSmoothing, kScale) as contiguous [n] f32. Grown (contents lost) only
  // when too small. Views stay valid until a later call grows that buffer.
  enum Vector { kSmoothing = 0, kScale = 1 };
  Tensor weight(DType dtype, int64_t rows, int64_t cols);
  Tensor vector(Vector slot, int64_t n);

  // A Linear over weight(dtype, rows, cols), or an Int8Linear over weight(kI8, rows, cols)
  // with vector(kScale, rows) and vector(kSmoothing, cols) — fill those first (the Int8Linear
  // checks the smoothing when it is built). Built once per shape and kept while the buffers
  // stay put, so oneDNN's primitives are reused across layers and steps.
  const kernels::Linear& linear(DType dtype, int64_t rows, int64_t cols);
  const kernels::Int8Linear& int8_linear(int64_t rows, int64_t cols);

  // Bytes of the buffers now held, times any buffer was (re)allocated, and bytes this rank
  // received through gathers into them (record_gathered, called by the users).
  int64_t capacity_bytes() const;
  int64_t allocations() const { return allocations_; }
  int64_t gathered_bytes() const { return gathered_bytes_; }
  void record_gathered(int64_t bytes) { gathered_bytes_ += bytes; }

 private:
  Tensor& grow(Tensor& buffer, size_t bytes);

  Tensor weight_;      // u8 bytes
  Tensor vectors_[2];  // u8 bytes
  struct Cached;
  std::vector<Cached> cached_;  // Linears over the current buffers
  int64_t allocations_ = 0;
  int64_t gathered_bytes_ = 0;
};

}  // namespace ctxpar::model
