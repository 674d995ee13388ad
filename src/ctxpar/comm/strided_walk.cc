#include "ctxpar/comm/strided_walk.h"

#include <algorithm>
#include <cstring>

#include "ctxpar/core/error.h"

namespace ctxpar {

StridedWalk::StridedWalk(const Shape& shape, std::span<const Tensor* const> operands)
    : num_operands_(static_cast<int>(operands.size())), numel_(shape_numel(shape)) {
  for (const Tensor* t : operands) {
    CTXPAR_CHECK(t->shape() == shape, "StridedWalk: operand {} does not have shape {}",
                 t->describe(), shape_str(shape));
    bases_.push_back(static_cast<char*>(const_cast<void*>(t->raw())));
  }
  // Keep dims of size > 1, merging each into its inner neighbour when every operand steps
  // over the inner one exactly (stride[outer] == stride[inner] * size[inner]).
  std::vector<std::vector<int64_t>> strides(num_operands_);
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    if (shape[d] == 1) continue;
    bool merge = !dims_.empty();
    for (int k = 0; merge && k < num_operands_; ++k) {
      const int64_t esize = static_cast<int64_t>(operands[k]->element_size());
      merge = operands[k]->strides()[d] * esize == strides[k].back() * dims_.back();
    }
    if (merge) {
      dims_.back() *= shape[d];
      continue;
    }
    dims_.push_back(shape[d]);
    for (int k = 0; k < num_operands_; ++k) {
      strides[k].push_back(operands[k]->strides()[d] *
                           static_cast<int64_t>(operands[k]->element_size()));
    }
  }
  if (dims_.empty()) {  // a scalar or all-ones shape: one element
    dims_.push_back(1);
    for (auto& s : strides) s.push_back(0);
  }
  std::reverse(dims_.begin(), dims_.end());
  const size_t nd = dims_.size();
  byte_strides_.resize(num_operands_ * nd);
  for (int k = 0; k < num_operands_; ++k) {
    for (size_t d = 0; d < nd; ++d) byte_strides_[k * nd + d] = strides[k][nd - 1 - d];
  }
}

void StridedWalk::locate(int64_t row, std::vector<int64_t>& index, std::vector<char*>& ptrs) const {
  const int nd = static_cast<int>(dims_.size());
  index.assign(nd, 0);
  ptrs = bases_;
  for (int d = nd - 2; d >= 0; --d) {
    index[d] = row % dims_[d];
    row /= dims_[d];
    for (int k = 0; k < num_operands_; ++k) ptrs[k] += index[d] * byte_strides_[k * nd + d];
  }
}

namespace {

template <typename T>
void copy_elements(char* dst, int64_t dst_stride, const char* src, int64_t src_stride,
                   int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(dst + i * dst_stride, src + i * src_stride, sizeof(T));
  }
}

}  // namespace

void strided_copy(const Tensor& src, const Tensor& dst) {
  CTXPAR_CHECK(src.dtype() == dst.dtype() && src.shape() == dst.shape(),
               "strided_copy: source {} and destination {} must match", src.describe(),
               dst.describe());
  if (src.numel() == 0 || src.raw() == dst.raw()) return;
  const size_t esize = src.element_size();
  const auto esize_i = static_cast<int64_t>(esize);
  if (src.is_contiguous() && dst.is_contiguous()) {
    std::memcpy(const_cast<void*>(dst.raw()), src.raw(), src.nbytes());
    return;
  }
  const Tensor* operands[] = {&dst, &src};
  StridedWalk walk(src.shape(), operands);
  walk.for_each_run(0, walk.numel(), [&](char* const* p, const int64_t* stride, int64_t count) {
    if (stride[0] == esize_i && stride[1] == esize_i) {
      std::memcpy(p[0], p[1], static_cast<size_t>(count) * esize);
      return;
    }
    switch (esize) {
      case 1:
        copy_elements<uint8_t>(p[0], stride[0], p[1], stride[1], count);
        break;
      case 2:
        copy_elements<uint16_t>(p[0], stride[0], p[1], stride[1], count);
        break;
      case 4:
        copy_elements<uint32_t>(p[0], stride[0], p[1], stride[1], count);
        break;
      default:
        copy_elements<uint64_t>(p[0], stride[0], p[1], stride[1], count);
        break;
    }
  });
}

}  // namespace ctxpar
