#include "ctxpar/model/layers/full_weight_workspace.h"

#include <optional>

#include "ctxpar/core/error.h"

namespace ctxpar::model {

struct FullWeightWorkspace::Cached {
  DType dtype;
  int64_t rows, cols;
  std::optional<kernels::Linear> dense;
  std::optional<kernels::Int8Linear> int8;
};

FullWeightWorkspace::FullWeightWorkspace() = default;
FullWeightWorkspace::~FullWeightWorkspace() = default;

Tensor& FullWeightWorkspace::grow(Tensor& buffer, size_t bytes) {
  if (!buffer.defined() || buffer.nbytes() < bytes) {
    // Linears over the old buffer would keep it alive (and read stale memory): drop them.
    cached_.clear();
    buffer = Tensor();
    buffer = Tensor::empty({static_cast<int64_t>(bytes)}, DType::kU8);
    ++allocations_;
  }
  return buffer;
}

Tensor FullWeightWorkspace::weight(DType dtype, int64_t rows, int64_t cols) {
  CTXPAR_CHECK(rows >= 1 && cols >= 1 &&
                   (dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kI8),
               "full-weight buffer: [{}, {}] of {} (need positive sizes and f32, bf16 or i8)", rows,
               cols, dtype_name(dtype));
  Tensor& buffer = grow(weight_, static_cast<size_t>(rows * cols) * dtype_size(dtype));
  return Tensor::wrap(buffer.raw(), {rows, cols}, dtype);
}

Tensor FullWeightWorkspace::vector(Vector slot, int64_t n) {
  CTXPAR_CHECK(n >= 1, "full-weight vector buffer of {} values", n);
  Tensor& buffer = grow(vectors_[slot], static_cast<size_t>(n) * sizeof(float));
  return Tensor::wrap(buffer.raw(), {n}, DType::kF32);
}

const kernels::Linear& FullWeightWorkspace::linear(DType dtype, int64_t rows, int64_t cols) {
  const Tensor w = weight(dtype, rows, cols);
  for (const Cached& c : cached_) {
    if (c.dense && c.dtype == dtype && c.rows == rows && c.cols == cols) return *c.dense;
  }
  Cached& c = cached_.emplace_back(Cached{dtype, rows, cols, std::nullopt, std::nullopt});
  c.dense.emplace(w);
  return *c.dense;
}

const kernels::Int8Linear& FullWeightWorkspace::int8_linear(int64_t rows, int64_t cols) {
  const Tensor w = weight(DType::kI8, rows, cols);
  const Tensor scale = vector(kScale, rows);
  const Tensor smooth = vector(kSmoothing, cols);
  for (const Cached& c : cached_) {
    if (c.int8 && c.rows == rows && c.cols == cols) return *c.int8;
  }
  Cached& c = cached_.emplace_back(Cached{DType::kI8, rows, cols, std::nullopt, std::nullopt});
  c.int8.emplace(w, scale, smooth);
  return *c.int8;
}

int64_t FullWeightWorkspace::capacity_bytes() const {
  int64_t bytes = weight_.defined() ? static_cast<int64_t>(weight_.nbytes()) : 0;
  for (const Tensor& v : vectors_) bytes += v.defined() ? static_cast<int64_t>(v.nbytes()) : 0;
  return bytes;
}

}  // namespace ctxpar::model
