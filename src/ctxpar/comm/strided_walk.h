// StridedWalk: visits same-shaped strided operands together in row-major order. Dimensions
// that are contiguous with their inner neighbour in every operand are merged, so a slice of
// a contiguous tensor is walked as a few long runs rather than element by element.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "ctxpar/core/tensor.h"

namespace ctxpar {

class StridedWalk {
 public:
  // Every operand must have `shape`; operands may have different element sizes.
  StridedWalk(const Shape& shape, std::span<const Tensor* const> operands);

  int64_t numel() const { return numel_; }
  int num_operands() const { return num_operands_; }

  // Calls fn(char* const* ptrs, const int64_t* inner_strides, int64_t count) for each run of
  // flat (row-major) elements [begin, end): ptrs[k] points at the run's first element of
  // operand k, inner_strides[k] is the byte step between its elements. Runs never cross a
  // row of the innermost merged dimension.
  template <typename Fn>
  void for_each_run(int64_t begin, int64_t end, Fn&& fn) const;

 private:
  void locate(int64_t row, std::vector<int64_t>& index, std::vector<char*>& ptrs) const;

  int num_operands_ = 0;
  int64_t numel_ = 0;
  std::vector<int64_t> dims_;          // merged dims, outermost first
  std::vector<int64_t> byte_strides_;  // [operand][dim]
  std::vector<char*> bases_;
};

template <typename Fn>
void StridedWalk::for_each_run(int64_t begin, int64_t end, Fn&& fn) const {
  if (begin >= end || numel_ == 0) return;
  const int nd = static_cast<int>(dims_.size());
  const int64_t inner = dims_.back();
  std::vector<int64_t> inner_strides(num_operands_);
  for (int k = 0; k < num_operands_; ++k) inner_strides[k] = byte_strides_[k * nd + nd - 1];
  std::vector<int64_t> index;
  std::vector<char*> row_ptrs, ptrs(num_operands_);
  int64_t row = begin / inner;
  int64_t col = begin % inner;
  locate(row, index, row_ptrs);
  int64_t pos = begin;
  while (pos < end) {
    const int64_t count = std::min(inner - col, end - pos);
    for (int k = 0; k < num_operands_; ++k) ptrs[k] = row_ptrs[k] + col * inner_strides[k];
    fn(ptrs.data(), inner_strides.data(), count);
    pos += count;
    col = 0;
    // Step to the next row: odometer over the outer dims.
    for (int d = nd - 2; d >= 0; --d) {
      for (int k = 0; k < num_operands_; ++k) row_ptrs[k] += byte_strides_[k * nd + d];
      if (++index[d] < dims_[d]) break;
      for (int k = 0; k < num_operands_; ++k) row_ptrs[k] -= byte_strides_[k * nd + d] * dims_[d];
      index[d] = 0;
    }
  }
}

// dst = src elementwise; same shape and dtype, any strides. Writes through dst's data pointer.
void strided_copy(const Tensor& src, const Tensor& dst);

}  // namespace ctxpar
