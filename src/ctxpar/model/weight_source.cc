#include "ctxpar/model/weight_source.h"

#include <string>

#include "ctxpar/core/error.h"

namespace ctxpar::model {

kernels::Fp8Scaling WeightSource::fp8_scaling(const std::string& name) const {
  CTXPAR_FAIL("tensor '{}' is not stored as FP8 in this weight source", name);
}

kernels::Fp8Weight WeightSource::get_fp8(const std::string& name, const Shape& /*full_shape*/,
                                         const Slice& /*slice*/) const {
  CTXPAR_FAIL("tensor '{}' is not stored as FP8 in this weight source", name);
}

void check_fp8_slice(const std::string& name, const Shape& full_shape, const Slice& slice,
                     kernels::Fp8Scaling scaling) {
  CTXPAR_CHECK_INPUT(full_shape.size() == 2, "FP8 tensor '{}' must be 2-D [out, in], got {}", name,
                     shape_str(full_shape));
  if (slice.kind == Slice::Kind::kFull || slice.size == 1) return;
  CTXPAR_CHECK_INPUT(slice.kind == Slice::Kind::kPart && (slice.dim == 0 || slice.dim == 1),
                     "FP8 tensor '{}' can be split only into equal parts along dim 0 or 1, not {}",
                     name, slice.describe());
  if (scaling == kernels::Fp8Scaling::kPerRow) return;  // a row's scale goes with the row
  const int64_t n = full_shape[static_cast<size_t>(slice.dim)];
  const int64_t b = kernels::kFp8BlockSize;
  if (n % slice.size == 0 && (n / slice.size) % b == 0) return;
  std::string valid;
  for (int64_t parts = 1; parts <= n; ++parts) {
    if (n % parts == 0 && ((n / parts) % b == 0 || parts == 1)) {
      valid += (valid.empty() ? "" : ", ") + std::to_string(parts);
    }
  }
  CTXPAR_INPUT_FAIL(
      "FP8 tensor '{}' {}: splitting dimension {} ({}) into {} parts (tensor parallelism) gives "
      "{} {} per part, which is not a multiple of the 128 of an FP8 scale block; part counts "
      "that cut on blocks: {}",
      name, shape_str(full_shape), slice.dim, n, slice.size,
      n % slice.size == 0 ? std::to_string(n / slice.size) : "unequal",
      slice.dim == 0 ? "rows" : "columns", valid);
}

}  // namespace ctxpar::model
