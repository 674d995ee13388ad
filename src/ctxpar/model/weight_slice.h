// Slice: which part of a full weight one tensor-parallel rank holds.
//
// Column-parallel linears ([out, in] weights, output rows split) use part(0, ...), their
// biases too; row-parallel linears split the input columns, part(1, ...). Each expert of an
// MoE layer is split like a dense MLP, along its own intermediate dimension (gate/up: dim 0,
// down: dim 1). The vocab-parallel embedding and lm_head use padded_part(0, ...): the vocab
// is padded up to a multiple of the rank count and the padding rows are zero.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "ctxpar/core/tensor.h"

namespace ctxpar::model {

struct Slice {
  enum class Kind : uint8_t { kFull, kPart, kPaddedPart };

  Kind kind = Kind::kFull;
  int dim = 0;       // the split dimension (kPart, kPaddedPart)
  int64_t rank = 0;  // this part, in [0, size)
  int64_t size = 1;  // number of parts

  static Slice full() { return {}; }
  // Rows [rank·n/size, (rank+1)·n/size) of dim; n must be divisible by size.
  static Slice part(int dim, int64_t rank, int64_t size);
  // As part() after padding dim up to padded_extent(n, size); rows >= n read as zero.
  static Slice padded_part(int dim, int64_t rank, int64_t size);

  static Slice column_parallel(int64_t rank, int64_t size) { return part(0, rank, size); }
  static Slice row_parallel(int64_t rank, int64_t size) { return part(1, rank, size); }
  static Slice vocab_parallel(int64_t rank, int64_t size) { return padded_part(0, rank, size); }

  std::string describe() const;  // "full", "dim 0 part 1/4", "dim 0 padded part 1/4"
};

// n rounded up to a multiple of parts.
int64_t padded_extent(int64_t n, int64_t parts);

// Where a slice of a row-major tensor comes from. The full tensor is viewed as
// [outer, full_rows, inner] around the split dimension (a full slice: [1, 1, numel]); the
// result is [outer, part_rows, inner], whose first source_end - source_begin rows along the
// middle are the source rows [source_begin, source_end) and whose remaining rows are padding.
struct SliceExtent {
  Shape shape;  // the result's shape
  int64_t outer = 1;
  int64_t full_rows = 1;
  int64_t part_rows = 1;
  int64_t source_begin = 0;
  int64_t source_end = 1;
  int64_t inner = 1;
};

// Checks that `slice` fits a tensor named `tensor_name` of full_shape (dim in range, the
// dim divisible for kPart) and throws Error naming the tensor and the numbers otherwise.
SliceExtent slice_extent(const Shape& full_shape, const Slice& slice, std::string_view tensor_name);

// Calls fn(source_offset, result_offset, count, is_padding) for each contiguous run of the
// slice, offsets in elements of the full tensor (source) and of the result. Runs come in
// result order; padding runs have no source (source_offset is meaningless).
void for_each_slice_run(const SliceExtent& extent,
                        const std::function<void(int64_t source_offset, int64_t result_offset,
                                                 int64_t count, bool is_padding)>& fn);

// Copies the slice of a contiguous row-major tensor at `source` (full_shape, source_dtype)
// into a new owning tensor of dtype `want`, converting between float dtypes (f32, bf16,
// f16). Integer dtypes must match exactly. Only the slice's bytes of `source` are read.
Tensor copy_slice(const void* source, DType source_dtype, const Shape& full_shape,
                  const Slice& slice, DType want, std::string_view tensor_name);

}  // namespace ctxpar::model
