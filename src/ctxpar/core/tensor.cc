#include "ctxpar/core/tensor.h"

#include <cstdlib>
#include <cstring>
#include <utility>

#include "ctxpar/core/error.h"
#include "ctxpar/core/huge_block_cache.h"

namespace ctxpar {
namespace {

std::atomic<int64_t> g_live_bytes{0};
std::atomic<int64_t> g_peak_bytes{0};
std::atomic<int64_t> g_allocations{0};

// Storage of at least kHugePageBytes is whole huge pages from the block cache: weights and KV
// caches are streamed from DRAM every decode step, and with THP in "madvise" mode (Debian's
// default) 4 KiB pages read ~15% slower (TLB misses, the prefetchers stopping at every page);
// activations of that size come and go in every layer of a prefill. Smaller tensors keep the
// 64-byte alignment of the C allocator.
size_t storage_bytes(size_t bytes) {
  if (bytes < kHugePageBytes) {
    const size_t rounded =
        (bytes + Tensor::kAlignment - 1) / Tensor::kAlignment * Tensor::kAlignment;
    return rounded == 0 ? Tensor::kAlignment : rounded;
  }
  return (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

void* allocate_storage(size_t rounded) {
  return rounded < kHugePageBytes ? std::aligned_alloc(Tensor::kAlignment, rounded)
                                  : allocate_huge_block(rounded);
}

void free_storage(void* p, size_t rounded) {
  if (rounded < kHugePageBytes) {
    std::free(p);
  } else {
    release_huge_block(p, rounded);
  }
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

int normalize_dim(int dim, int ndim) {
  const int d = dim < 0 ? dim + ndim : dim;
  CTXPAR_CHECK(d >= 0 && d < ndim, "dimension {} out of range for a tensor of {} dimensions", dim,
               ndim);
  return d;
}

// Converting element copy for one element. Float kinds go through float; integer kinds
// through int64 (no float <-> int conversions are needed anywhere in the engine).
// FP8 counts as a float kind: converting it element-wise gives its e4m3 value (without any
// block scale, which lives in a separate tensor).
inline bool is_float(DType d) {
  return d == DType::kF32 || d == DType::kBF16 || d == DType::kF16 || d == DType::kF8E4M3;
}

double load_as_double(const void* p, DType d) {
  switch (d) {
    case DType::kF32:
      return *static_cast<const float*>(p);
    case DType::kBF16:
      return to_float(*static_cast<const bf16*>(p));
    case DType::kF16:
      return to_float(*static_cast<const f16*>(p));
    case DType::kI32:
      return *static_cast<const int32_t*>(p);
    case DType::kI64:
      return static_cast<double>(*static_cast<const int64_t*>(p));
    case DType::kU8:
      return *static_cast<const uint8_t*>(p);
    case DType::kI8:
      return *static_cast<const int8_t*>(p);
    case DType::kF8E4M3:
      return fp8_e4m3::to_f32(*static_cast<const uint8_t*>(p));
  }
  return 0;
}

void store_from_double(void* p, DType d, double v) {
  switch (d) {
    case DType::kF32:
      *static_cast<float*>(p) = static_cast<float>(v);
      break;
    case DType::kBF16:
      *static_cast<bf16*>(p) = bf16(static_cast<float>(v));
      break;
    case DType::kF16:
      *static_cast<f16*>(p) = f16(static_cast<float>(v));
      break;
    case DType::kI32:
      *static_cast<int32_t*>(p) = static_cast<int32_t>(v);
      break;
    case DType::kI64:
      *static_cast<int64_t*>(p) = static_cast<int64_t>(v);
      break;
    case DType::kU8:
      *static_cast<uint8_t*>(p) = static_cast<uint8_t>(v);
      break;
    case DType::kI8:
      *static_cast<int8_t*>(p) = static_cast<int8_t>(v);
      break;
    case DType::kF8E4M3:
      *static_cast<uint8_t*>(p) = fp8_e4m3::from_f32(static_cast<float>(v));
      break;
  }
}

// Calls fn(dst_ptr, src_ptr, n) for each innermost run of n elements, walking both tensors'
// strides. The innermost run is contiguous in both when inner strides are 1.
template <typename Fn>
void for_each_row(const Shape& shape, char* dst, const std::vector<int64_t>& dst_strides,
                  size_t dst_esize, const char* src, const std::vector<int64_t>& src_strides,
                  size_t src_esize, int dim, Fn&& fn) {
  const int nd = static_cast<int>(shape.size());
  if (nd == 0) {
    fn(dst, src, 1, 1, 1);
    return;
  }
  if (dim == nd - 1) {
    fn(dst, src, shape[dim], dst_strides[dim], src_strides[dim]);
    return;
  }
  for (int64_t i = 0; i < shape[dim]; ++i) {
    for_each_row(shape, dst + i * dst_strides[dim] * static_cast<int64_t>(dst_esize), dst_strides,
                 dst_esize, src + i * src_strides[dim] * static_cast<int64_t>(src_esize),
                 src_strides, src_esize, dim + 1, fn);
  }
}

}  // namespace

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

AllocationStats allocation_stats() {
  return {g_live_bytes.load(), g_peak_bytes.load(), g_allocations.load()};
}

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  for (int64_t s : shape) {
    CTXPAR_CHECK(s >= 0, "tensor shape {} has a negative dimension", shape_str(shape));
  }
  Tensor t;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = dtype;
  t.defined_ = true;
  const size_t bytes = t.nbytes();
  const size_t rounded = storage_bytes(bytes);
  void* p = allocate_storage(rounded);
  CTXPAR_CHECK(p != nullptr, "out of memory allocating {} bytes for {}", bytes, t.describe());
  const auto charged = static_cast<int64_t>(bytes);
  const int64_t live = g_live_bytes.fetch_add(charged) + charged;
  g_allocations.fetch_add(1);
  int64_t peak = g_peak_bytes.load();
  while (live > peak && !g_peak_bytes.compare_exchange_weak(peak, live)) {
  }
  t.storage_ = std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [charged, rounded](uint8_t* q) {
    g_live_bytes.fetch_sub(charged);
    free_storage(q, rounded);
  });
  t.data_ = p;
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  std::memset(t.data_, 0, t.nbytes());
  return t;
}

Tensor Tensor::wrap(void* data, const Shape& shape, DType dtype, std::vector<int64_t> strides) {
  Tensor t;
  t.shape_ = shape;
  t.strides_ = strides.empty() ? contiguous_strides(shape) : std::move(strides);
  CTXPAR_CHECK(t.strides_.size() == shape.size(), "wrap: {} strides for shape {}",
               t.strides_.size(), shape_str(shape));
  t.dtype_ = dtype;
  t.data_ = data;
  t.defined_ = true;
  return t;
}

int64_t Tensor::size(int dim) const {
  return shape_[normalize_dim(dim, ndim())];
}
int64_t Tensor::stride(int dim) const {
  return strides_[normalize_dim(dim, ndim())];
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (int i = ndim() - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

void Tensor::check_dtype(DType expected) const {
  CTXPAR_CHECK(dtype_ == expected, "tensor {} accessed as {}", describe(), dtype_name(expected));
}

Tensor Tensor::slice(int dim, int64_t begin, int64_t end) const {
  const int d = normalize_dim(dim, ndim());
  CTXPAR_CHECK(0 <= begin && begin <= end && end <= shape_[d],
               "slice [{}, {}) of dimension {} (size {}) of {} is out of range", begin, end, d,
               shape_[d], describe());
  Tensor t = *this;
  t.shape_[d] = end - begin;
  t.data_ = static_cast<char*>(data_) + begin * strides_[d] * static_cast<int64_t>(element_size());
  return t;
}

Tensor Tensor::select(int dim, int64_t index) const {
  const int d = normalize_dim(dim, ndim());
  CTXPAR_CHECK(0 <= index && index < shape_[d], "index {} out of range for dimension {} of {}",
               index, d, describe());
  Tensor t = slice(d, index, index + 1);
  t.shape_.erase(t.shape_.begin() + d);
  t.strides_.erase(t.strides_.begin() + d);
  return t;
}

Tensor Tensor::view(const Shape& shape) const {
  CTXPAR_CHECK(is_contiguous(), "view {} of non-contiguous tensor {}", shape_str(shape),
               describe());
  Shape s = shape;
  int infer = -1;
  int64_t known = 1;
  for (int i = 0; i < static_cast<int>(s.size()); ++i) {
    if (s[i] == -1) {
      CTXPAR_CHECK(infer < 0, "view shape {} has more than one -1", shape_str(shape));
      infer = i;
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) {
    CTXPAR_CHECK(known > 0 && numel() % known == 0, "cannot infer -1 in view {} of {}",
                 shape_str(shape), describe());
    s[infer] = numel() / known;
  }
  CTXPAR_CHECK(shape_numel(s) == numel(), "view {} has {} elements but {} has {}", shape_str(s),
               shape_numel(s), describe(), numel());
  Tensor t = *this;
  t.shape_ = s;
  t.strides_ = contiguous_strides(s);
  return t;
}

Tensor Tensor::unsqueeze(int dim) const {
  const int d = dim < 0 ? dim + ndim() + 1 : dim;
  CTXPAR_CHECK(d >= 0 && d <= ndim(), "unsqueeze dimension {} out of range for {}", dim,
               describe());
  Tensor t = *this;
  const int64_t st = d < ndim() ? strides_[d] * shape_[d] : 1;
  t.shape_.insert(t.shape_.begin() + d, 1);
  t.strides_.insert(t.strides_.begin() + d, st);
  return t;
}

Tensor Tensor::transpose(int dim0, int dim1) const {
  const int a = normalize_dim(dim0, ndim()), b = normalize_dim(dim1, ndim());
  Tensor t = *this;
  std::swap(t.shape_[a], t.shape_[b]);
  std::swap(t.strides_[a], t.strides_[b]);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape_, dtype_);
  t.copy_from(*this);
  return t;
}

Tensor Tensor::contiguous() const {
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::to(DType dtype) const {
  Tensor t = empty(shape_, dtype);
  t.copy_from(*this);
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  CTXPAR_CHECK(src.shape_ == shape_, "copy_from: source {} does not match destination {}",
               src.describe(), describe());
  CTXPAR_CHECK(is_float(src.dtype_) == is_float(dtype_),
               "copy_from: cannot convert {} to {} (float and integer kinds do not mix)",
               dtype_name(src.dtype_), dtype_name(dtype_));
  if (numel() == 0) return;
  if (src.dtype_ == dtype_ && is_contiguous() && src.is_contiguous()) {
    std::memmove(data_, src.data_, nbytes());
    return;
  }
  const DType sd = src.dtype_, dd = dtype_;
  const size_t se = src.element_size(), de = element_size();
  for_each_row(shape_, static_cast<char*>(data_), strides_, de, static_cast<const char*>(src.data_),
               src.strides_, se, 0,
               [&](char* d, const char* s, int64_t n, int64_t dstr, int64_t sstr) {
                 if (sd == dd && dstr == 1 && sstr == 1) {
                   std::memmove(d, s, static_cast<size_t>(n) * de);
                   return;
                 }
                 // Contiguous rows between f32 and bf16 (weights at load, a bf16 cache's k/v)
                 // as plain loops the compiler vectorizes: with the general loop below and its
                 // dtype tests per element, `ctxpar bench --load-format dummy` of a 4 GB
                 // DeepSeek-V2-Lite-shaped model took 5.9-7.7 s to start, 5.1 s with these.
                 if (sd == DType::kF32 && dd == DType::kBF16 && dstr == 1 && sstr == 1) {
                   const auto* sp = reinterpret_cast<const float*>(s);
                   auto* dp = reinterpret_cast<uint16_t*>(d);
                   for (int64_t i = 0; i < n; ++i) dp[i] = bf16::from_f32(sp[i]);
                   return;
                 }
                 if (sd == DType::kBF16 && dd == DType::kF32 && dstr == 1 && sstr == 1) {
                   const auto* sp = reinterpret_cast<const uint16_t*>(s);
                   auto* dp = reinterpret_cast<float*>(d);
                   for (int64_t i = 0; i < n; ++i) dp[i] = bf16::to_f32(sp[i]);
                   return;
                 }
                 for (int64_t i = 0; i < n; ++i) {
                   const char* sp = s + i * sstr * static_cast<int64_t>(se);
                   char* dp = d + i * dstr * static_cast<int64_t>(de);
                   if (sd == dd) {
                     std::memcpy(dp, sp, de);
                   } else if (sd == DType::kF32 && dd == DType::kBF16) {
                     *reinterpret_cast<bf16*>(dp) = bf16(*reinterpret_cast<const float*>(sp));
                   } else if (sd == DType::kBF16 && dd == DType::kF32) {
                     *reinterpret_cast<float*>(dp) = to_float(*reinterpret_cast<const bf16*>(sp));
                   } else {
                     store_from_double(dp, dd, load_as_double(sp, sd));
                   }
                 }
               });
}

void Tensor::fill(double value) {
  if (numel() == 0) return;
  Tensor one = empty({}, dtype_);
  store_from_double(one.data_, dtype_, value);
  for_each_row(shape_, static_cast<char*>(data_), strides_, element_size(),
               static_cast<const char*>(one.data_), std::vector<int64_t>(shape_.size(), 0),
               element_size(), 0, [&](char* d, const char* s, int64_t n, int64_t dstr, int64_t) {
                 for (int64_t i = 0; i < n; ++i) {
                   std::memcpy(d + i * dstr * static_cast<int64_t>(element_size()), s,
                               element_size());
                 }
               });
}

void Tensor::fill_bytes(uint8_t byte) {
  CTXPAR_CHECK(is_contiguous(), "fill_bytes needs a contiguous tensor, got {}", describe());
  std::memset(data_, byte, nbytes());
}

double Tensor::item_as_double(const std::vector<int64_t>& index) const {
  CTXPAR_CHECK(static_cast<int>(index.size()) == ndim(), "index of {} dims into {}", index.size(),
               describe());
  int64_t off = 0;
  for (int i = 0; i < ndim(); ++i) {
    CTXPAR_CHECK(index[i] >= 0 && index[i] < shape_[i], "index {} out of range in dim {} of {}",
                 index[i], i, describe());
    off += index[i] * strides_[i];
  }
  return load_as_double(
      static_cast<const char*>(data_) + off * static_cast<int64_t>(element_size()), dtype_);
}

std::string Tensor::describe() const {
  return std::string(dtype_name(dtype_)) + shape_str(shape_);
}

}  // namespace ctxpar
