#include "ctxpar/kernels/topk.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/topk_checks.h"

namespace ctxpar::kernels {
namespace detail {

void check_topk_args(const char* op, const Tensor& scores, int64_t k, const Tensor* valid_len,
                     const Tensor& indices, const Tensor* values) {
  CTXPAR_CHECK(scores.defined() && scores.ndim() == 2 && scores.dtype() == DType::kF32 &&
                   (scores.stride(1) == 1 || scores.size(1) <= 1),
               "{}: scores must be float32 [rows, n] with a contiguous last dim, got {}", op,
               scores.defined() ? scores.describe() : "an undefined tensor");
  CTXPAR_CHECK(scores.size(1) < std::numeric_limits<int32_t>::max(),
               "{}: {} columns do not fit the int32 indices", op, scores.size(1));
  CTXPAR_CHECK(k >= 0, "{}: k = {} must be >= 0", op, k);
  const int64_t rows = scores.size(0);
  CTXPAR_CHECK(
      valid_len == nullptr || (valid_len->defined() && valid_len->ndim() == 1 &&
                               valid_len->size(0) == rows && valid_len->dtype() == DType::kI32),
      "{}: valid_len must be int32 [{}], got {}", op, rows,
      valid_len && valid_len->defined() ? valid_len->describe() : "an undefined tensor");
  CTXPAR_CHECK(indices.defined() && indices.ndim() == 2 && indices.dtype() == DType::kI32 &&
                   indices.size(0) == rows && indices.size(1) == k,
               "{}: indices must be int32 [{}, {}], got {}", op, rows, k,
               indices.defined() ? indices.describe() : "an undefined tensor");
  CTXPAR_CHECK(values == nullptr ||
                   (values->defined() && values->ndim() == 2 && values->dtype() == DType::kF32 &&
                    values->size(0) == rows && values->size(1) == k),
               "{}: values must be float32 [{}, {}], got {}", op, rows, k,
               values && values->defined() ? values->describe() : "an undefined tensor");
}

int64_t topk_valid_columns(const Tensor& scores, const Tensor* valid_len, int64_t r) {
  const int64_t n = scores.size(1);
  if (valid_len == nullptr) return n;
  const int64_t v = valid_len->data<int32_t>()[r * valid_len->stride(0)];
  CTXPAR_CHECK(v >= 0 && v <= n, "topk: valid_len[{}] = {} is outside [0, {}]", r, v, n);
  return v;
}

}  // namespace detail

namespace {

// A 32-bit key whose unsigned order is the score order of topk.h: NaN lowest, −0 == +0.
inline uint32_t order_key(float v) {
  if (v != v) return 0;
  if (v == 0) v = 0;  // −0 → +0
  const uint32_t bits = f32_bits(v);
  // Negative floats order backwards by their bits, so flip them; set the sign bit on
  // positives so they land above every negative. −inf maps to 0x007fffff, above NaN's 0.
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// Score key in the high word, inverted column in the low word: a larger value is a better
// candidate, and ties on score go to the lower column.
inline uint64_t candidate(float score, int64_t column) {
  return (static_cast<uint64_t>(order_key(score)) << 32) |
         (0xffffffffu - static_cast<uint32_t>(column));
}

inline int32_t candidate_column(uint64_t c) {
  return static_cast<int32_t>(0xffffffffu - static_cast<uint32_t>(c & 0xffffffffu));
}

}  // namespace

void topk(const Tensor& scores, int64_t k, const Tensor* valid_len, Tensor& indices,
          Tensor* values) {
  detail::check_topk_args("topk", scores, k, valid_len, indices, values);
  thread_local std::vector<uint64_t> candidates;
  for (int64_t r = 0; r < scores.size(0); ++r) {
    const int64_t valid = detail::topk_valid_columns(scores, valid_len, r);
    const int64_t selected = std::min(k, valid);
    const float* row = scores.data<float>() + r * scores.stride(0);
    candidates.resize(static_cast<size_t>(valid));
    for (int64_t c = 0; c < valid; ++c) candidates[c] = candidate(row[c], c);
    const auto first = candidates.begin(), middle = first + selected;
    if (selected < valid) std::nth_element(first, middle, candidates.end(), std::greater<>());
    std::sort(first, middle, std::greater<>());

    int32_t* out = indices.data<int32_t>() + r * indices.stride(0);
    float* out_values = values ? values->data<float>() + r * values->stride(0) : nullptr;
    const int64_t istride = indices.stride(1);
    const int64_t vstride = values ? values->stride(1) : 0;
    for (int64_t j = 0; j < k; ++j) {
      const int32_t column = j < selected ? candidate_column(candidates[j]) : -1;
      out[j * istride] = column;
      if (out_values != nullptr) {
        out_values[j * vstride] =
            column >= 0 ? row[column] : -std::numeric_limits<float>::infinity();
      }
    }
  }
}

}  // namespace ctxpar::kernels
