// Tensor: a typed, strided view of memory that either owns its storage (64-byte aligned;
// from 2 MiB up whole transparent huge pages, reused after a free by the next tensor of the
// same size (huge_block_cache.h); shared by every view sliced from it) or wraps memory someone
// else owns.
//
// Shapes are row-major; strides are in elements. Views (slice, select, view) never copy and
// keep the owning storage alive. Element access goes through data<T>(), which checks the dtype.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ctxpar/core/dtype.h"

namespace ctxpar {

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& shape);
std::string shape_str(const Shape& shape);

// Bytes currently held by owning tensors in this process, and the high-water mark. Used by
// tests that prove a buffer is (or is not) a second persistent copy.
struct AllocationStats {
  int64_t live_bytes;
  int64_t peak_bytes;
  int64_t allocations;
};
AllocationStats allocation_stats();

class Tensor {
 public:
  static constexpr size_t kAlignment = 64;

  Tensor() = default;

  // Owning, contiguous, uninitialized storage of shape_numel(shape) elements.
  static Tensor empty(const Shape& shape, DType dtype);
  static Tensor zeros(const Shape& shape, DType dtype);
  // Non-owning view of memory the caller keeps alive for the tensor's lifetime.
  // Empty strides means contiguous.
  static Tensor wrap(void* data, const Shape& shape, DType dtype,
                     std::vector<int64_t> strides = {});

  bool defined() const { return defined_; }
  DType dtype() const { return dtype_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  const Shape& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  // Negative dims count from the end, as in PyTorch.
  int64_t size(int dim) const;
  int64_t stride(int dim) const;
  int64_t numel() const { return shape_numel(shape_); }
  size_t element_size() const { return dtype_size(dtype_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * element_size(); }
  bool is_contiguous() const;
  bool owns_storage() const { return storage_ != nullptr; }

  template <typename T>
  T* data() {
    check_dtype(dtype_of<T>());
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    check_dtype(dtype_of<T>());
    return static_cast<const T*>(data_);
  }
  void* raw() { return data_; }
  const void* raw() const { return data_; }

  // Views sharing this tensor's storage.
  Tensor slice(int dim, int64_t begin, int64_t end) const;
  Tensor select(int dim, int64_t index) const;  // removes dim
  Tensor view(const Shape& shape) const;        // contiguous only; one -1 is inferred
  Tensor unsqueeze(int dim) const;
  Tensor transpose(int dim0, int dim1) const;  // swaps two dims' sizes and strides

  // Copies.
  Tensor clone() const;               // contiguous copy, same dtype
  Tensor contiguous() const;          // *this if already contiguous, else clone()
  Tensor to(DType dtype) const;       // contiguous converted copy
  void copy_from(const Tensor& src);  // same shape; converts between float dtypes / int dtypes
  void fill(double value);
  void fill_bytes(uint8_t byte);  // e.g. poisoning outputs in tests (0xff is NaN for floats)

  // Reads one element as double (any dtype); for tests and debugging, not hot paths.
  double item_as_double(const std::vector<int64_t>& index) const;

  std::string describe() const;  // "bfloat16[4, 8]"

 private:
  void check_dtype(DType expected) const;

  std::shared_ptr<uint8_t> storage_;  // null for wrapped memory
  void* data_ = nullptr;
  Shape shape_;
  std::vector<int64_t> strides_;
  DType dtype_ = DType::kF32;
  bool defined_ = false;
};

}  // namespace ctxpar
