#include "ctxpar/kernels/kv_cache_ops.h"

#include <cstring>

#include "ctxpar/core/error.h"
#include "ctxpar/core/fp8.h"

namespace ctxpar::kernels {
namespace {

void check_cache_dtype(const Tensor& cache, const char* what) {
  CTXPAR_CHECK(cache.dtype() == DType::kF32 || cache.dtype() == DType::kBF16 ||
                   cache.dtype() == DType::kF8E4M3,
               "{} {} is not float32, bfloat16 or float8_e4m3fn", what, cache.describe());
}

// Elements per slot row, checking that the row dims (all after the first two) are contiguous
// within the row so one row is a single run of memory.
int64_t cache_row_elems(const Tensor& cache) {
  CTXPAR_CHECK(cache.ndim() >= 3, "KV cache {} must be [num_blocks, block_size, row...]",
               cache.describe());
  check_cache_dtype(cache, "KV cache");
  int64_t elems = 1;
  for (int d = cache.ndim() - 1; d >= 2; --d) {
    CTXPAR_CHECK(cache.shape()[d] == 1 || cache.stride(d) == elems,
                 "KV cache {} rows are not contiguous in dim {}", cache.describe(), d);
    elems *= cache.shape()[d];
  }
  return elems;
}

void check_rows_match(const Tensor& rows, const Tensor& cache, const char* what) {
  CTXPAR_CHECK(rows.ndim() == cache.ndim() - 1, "{}: rows {} do not match cache rows of {}", what,
               rows.describe(), cache.describe());
  for (int d = 1; d < rows.ndim(); ++d) {
    CTXPAR_CHECK(rows.shape()[d] == cache.shape()[d + 1],
                 "{}: rows {} do not match cache rows of {}", what, rows.describe(),
                 cache.describe());
  }
}

// Checks that rows [tokens, row...] have contiguous row dims; returns the row stride.
int64_t rows_stride(const Tensor& rows, int64_t row_elems) {
  int64_t elems = 1;
  for (int d = rows.ndim() - 1; d >= 1; --d) {
    CTXPAR_CHECK(rows.shape()[d] == 1 || rows.stride(d) == elems,
                 "rows {} are not contiguous within a row", rows.describe());
    elems *= rows.shape()[d];
  }
  CTXPAR_CHECK(elems == row_elems, "rows {} hold {} elements per row, cache rows hold {}",
               rows.describe(), elems, row_elems);
  return rows.stride(0);
}

}  // namespace

Tensor at_cache_dtype(const Tensor& rows, const Tensor& cache) {
  CTXPAR_CHECK(rows.dtype() == DType::kF32, "at_cache_dtype: rows must be float32, got {}",
               rows.describe());
  check_cache_dtype(cache, "at_cache_dtype: cache");
  if (cache.dtype() == DType::kF32) return rows;
  if (cache.dtype() == DType::kBF16) return rows.to(DType::kBF16);
  // e4m3 values as bf16, which holds every one exactly.
  const Tensor src = rows.contiguous();
  Tensor out = Tensor::empty(src.shape(), DType::kBF16);
  const float* in = src.data<float>();
  bf16* o = out.data<bf16>();
  for (int64_t i = 0; i < src.numel(); ++i)
    o[i] = bf16(fp8_e4m3::to_f32(fp8_e4m3::from_f32(in[i])));
  return out;
}

void write_cache_rows(const Tensor& rows, const Tensor& slots, Tensor& cache) {
  const int64_t row = cache_row_elems(cache);
  check_rows_match(rows, cache, "write_cache_rows");
  CTXPAR_CHECK(rows.dtype() == DType::kF32, "write_cache_rows: rows must be float32, got {}",
               rows.describe());
  CTXPAR_CHECK(slots.dtype() == DType::kI64 && slots.ndim() == 1 && slots.size(0) == rows.size(0),
               "write_cache_rows: slots {} must be int64[{}]", slots.describe(), rows.size(0));
  const int64_t src_stride = rows_stride(rows, row);
  const int64_t block = cache.size(1);
  const int64_t num_slots = cache.size(0) * block;
  const float* src = rows.data<float>();
  const int64_t* slot = slots.data<int64_t>();
  for (int64_t t = 0; t < rows.size(0); ++t) {
    const int64_t s = slot[t];
    if (s < 0) continue;
    CTXPAR_CHECK(s < num_slots, "slot {} of token {} is outside the cache's {} slots", s, t,
                 num_slots);
    const int64_t offset = (s / block) * cache.stride(0) + (s % block) * cache.stride(1);
    const float* in = src + t * src_stride;
    if (cache.dtype() == DType::kF32) {
      std::memcpy(cache.data<float>() + offset, in, static_cast<size_t>(row) * sizeof(float));
    } else if (cache.dtype() == DType::kBF16) {
      bf16* out = cache.data<bf16>() + offset;
      for (int64_t i = 0; i < row; ++i) out[i] = bf16(in[i]);
    } else {
      uint8_t* out = static_cast<uint8_t*>(cache.raw()) + offset;
      for (int64_t i = 0; i < row; ++i) out[i] = fp8_e4m3::from_f32(in[i]);
    }
  }
}

void read_cache_rows(const Tensor& cache, std::span<const int32_t> block_table, int64_t first,
                     int64_t count, Tensor& out) {
  const int64_t row = cache_row_elems(cache);
  check_rows_match(out, cache, "read_cache_rows");
  CTXPAR_CHECK(out.dtype() == DType::kF32 && out.size(0) == count,
               "read_cache_rows: out {} must be float32 with {} rows", out.describe(), count);
  CTXPAR_CHECK(first >= 0 && count >= 0, "read_cache_rows: range [{}, {}) is invalid", first,
               first + count);
  const int64_t dst_stride = rows_stride(out, row);
  const int64_t block = cache.size(1);
  float* dst = out.data<float>();
  for (int64_t i = 0; i < count; ++i) {
    const int64_t li = first + i;
    const auto vb = static_cast<size_t>(li / block);
    CTXPAR_CHECK(vb < block_table.size(),
                 "local index {} needs block table entry {} but the table has {}", li, vb,
                 block_table.size());
    const int32_t id = block_table[vb];
    CTXPAR_CHECK(id >= 0 && id < cache.size(0), "block id {} is outside the cache's {} blocks", id,
                 cache.size(0));
    const int64_t offset = id * cache.stride(0) + (li % block) * cache.stride(1);
    float* o = dst + i * dst_stride;
    if (cache.dtype() == DType::kF32) {
      std::memcpy(o, cache.data<float>() + offset, static_cast<size_t>(row) * sizeof(float));
    } else if (cache.dtype() == DType::kBF16) {
      const bf16* in = cache.data<bf16>() + offset;
      for (int64_t j = 0; j < row; ++j) o[j] = to_float(in[j]);
    } else {
      const uint8_t* in = static_cast<const uint8_t*>(cache.raw()) + offset;
      for (int64_t j = 0; j < row; ++j) o[j] = fp8_e4m3::to_f32(in[j]);
    }
  }
}

}  // namespace ctxpar::kernels
