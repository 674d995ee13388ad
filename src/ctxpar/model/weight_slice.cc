#include "ctxpar/model/weight_slice.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "ctxpar/core/error.h"
#include "ctxpar/core/half.h"

namespace ctxpar::model {
namespace {

bool is_float(DType d) {
  return d == DType::kF32 || d == DType::kBF16 || d == DType::kF16;
}

float load_float(const uint8_t* p, DType d) {
  switch (d) {
    case DType::kF32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::kBF16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return bf16::to_f32(b);
    }
    default: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return f16::to_f32(h);
    }
  }
}

void store_float(uint8_t* p, DType d, float f) {
  switch (d) {
    case DType::kF32:
      std::memcpy(p, &f, 4);
      break;
    case DType::kBF16: {
      const uint16_t b = bf16::from_f32(f);
      std::memcpy(p, &b, 2);
      break;
    }
    default: {
      const uint16_t h = f16::from_f32(f);
      std::memcpy(p, &h, 2);
      break;
    }
  }
}

// Source bytes may be unaligned (a safetensors data region is only as aligned as its writer
// made it), so elements are moved with memcpy.
void convert_run(const uint8_t* src, DType sd, uint8_t* dst, DType dd, int64_t n) {
  if (sd == dd) {
    std::memcpy(dst, src, static_cast<size_t>(n) * dtype_size(sd));
    return;
  }
  const size_t ss = dtype_size(sd), ds = dtype_size(dd);
  for (int64_t i = 0; i < n; ++i) store_float(dst + i * ds, dd, load_float(src + i * ss, sd));
}

}  // namespace

Slice Slice::part(int dim, int64_t rank, int64_t size) {
  CTXPAR_CHECK(size >= 1 && rank >= 0 && rank < size,
               "slice part {} of {} is invalid: need parts >= 1 and 0 <= rank < parts", rank, size);
  CTXPAR_CHECK(dim >= 0, "slice dimension {} must be >= 0", dim);
  return {Kind::kPart, dim, rank, size};
}

Slice Slice::padded_part(int dim, int64_t rank, int64_t size) {
  Slice s = part(dim, rank, size);
  s.kind = Kind::kPaddedPart;
  return s;
}

std::string Slice::describe() const {
  switch (kind) {
    case Kind::kFull:
      return "full";
    case Kind::kPart:
      return fmt::format("dim {} part {}/{}", dim, rank, size);
    case Kind::kPaddedPart:
      return fmt::format("dim {} padded part {}/{}", dim, rank, size);
  }
  return "unknown";
}

int64_t padded_extent(int64_t n, int64_t parts) {
  return (n + parts - 1) / parts * parts;
}

SliceExtent slice_extent(const Shape& full_shape, const Slice& slice,
                         std::string_view tensor_name) {
  SliceExtent e;
  e.shape = full_shape;
  if (slice.kind == Slice::Kind::kFull) {
    e.inner = shape_numel(full_shape);
    return e;
  }
  const int nd = static_cast<int>(full_shape.size());
  CTXPAR_CHECK_INPUT(slice.dim >= 0 && slice.dim < nd,
                     "tensor '{}' of shape {} has no dimension {} to split ({})", tensor_name,
                     shape_str(full_shape), slice.dim, slice.describe());
  CTXPAR_CHECK(slice.size >= 1 && slice.rank >= 0 && slice.rank < slice.size,
               "tensor '{}': invalid slice {}", tensor_name, slice.describe());
  const int64_t n = full_shape[slice.dim];
  if (slice.kind == Slice::Kind::kPart) {
    CTXPAR_CHECK_INPUT(n % slice.size == 0,
                       "tensor '{}' of shape {}: dimension {} of size {} is not divisible into {} "
                       "parts ({})",
                       tensor_name, shape_str(full_shape), slice.dim, n, slice.size,
                       slice.describe());
    e.part_rows = n / slice.size;
  } else {
    e.part_rows = padded_extent(n, slice.size) / slice.size;
  }
  e.full_rows = n;
  e.shape[slice.dim] = e.part_rows;
  // With padding, late ranks may start at or past n: they read fewer (or no) source rows.
  e.source_begin = std::min(n, slice.rank * e.part_rows);
  e.source_end = std::min(n, (slice.rank + 1) * e.part_rows);
  for (int i = 0; i < slice.dim; ++i) e.outer *= full_shape[i];
  for (int i = slice.dim + 1; i < nd; ++i) e.inner *= full_shape[i];
  return e;
}

void for_each_slice_run(const SliceExtent& e,
                        const std::function<void(int64_t, int64_t, int64_t, bool)>& fn) {
  if (e.inner == 0) return;
  const int64_t copied = (e.source_end - e.source_begin) * e.inner;
  const int64_t padding = e.part_rows * e.inner - copied;
  for (int64_t o = 0; o < e.outer; ++o) {
    const int64_t result = o * e.part_rows * e.inner;
    if (copied > 0) fn((o * e.full_rows + e.source_begin) * e.inner, result, copied, false);
    if (padding > 0) fn(0, result + copied, padding, true);
  }
}

Tensor copy_slice(const void* source, DType source_dtype, const Shape& full_shape,
                  const Slice& slice, DType want, std::string_view tensor_name) {
  CTXPAR_CHECK_INPUT(source_dtype == want || (is_float(source_dtype) && is_float(want)),
                     "tensor '{}' is stored as {} and cannot be read as {} (only float dtypes "
                     "convert: float32, bfloat16, float16)",
                     tensor_name, dtype_name(source_dtype), dtype_name(want));
  const SliceExtent e = slice_extent(full_shape, slice, tensor_name);
  Tensor out = Tensor::empty(e.shape, want);
  const auto* src = static_cast<const uint8_t*>(source);
  auto* dst = static_cast<uint8_t*>(out.raw());
  const size_t ss = dtype_size(source_dtype), ds = dtype_size(want);
  for_each_slice_run(e, [&](int64_t from, int64_t to, int64_t count, bool is_padding) {
    uint8_t* d = dst + static_cast<size_t>(to) * ds;
    if (is_padding) {
      std::memset(d, 0, static_cast<size_t>(count) * ds);  // all-zero bits are 0 in every dtype
    } else {
      convert_run(src + static_cast<size_t>(from) * ss, source_dtype, d, want, count);
    }
  });
  return out;
}

}  // namespace ctxpar::model
