#include "ctxpar/kernels/rope.h"

#include <cmath>
#include <string>

#include "ctxpar/core/error.h"

namespace ctxpar::kernels {
namespace {

template <typename T>
inline float load(const T* p) {
  return to_float(*p);
}
template <typename T>
inline void store(T* p, float v) {
  *p = from_float<T>(v);
}

// One head's rotary part, x[0:r], by the angles whose cos/sin (r/2 each) are given.
template <typename T>
void rotate_half(T* x, const float* cos, const float* sin, int64_t half) {
  T* x1 = x;
  T* x2 = x + half;
  for (int64_t j = 0; j < half; ++j) {
    const float a = load(x1 + j), b = load(x2 + j);
    store(x1 + j, a * cos[j] - b * sin[j]);
    store(x2 + j, b * cos[j] + a * sin[j]);
  }
}

template <typename T>
void rotate_interleaved(T* x, const float* cos, const float* sin, int64_t half) {
  for (int64_t j = 0; j < half; ++j) {
    const float a = load(x + 2 * j), b = load(x + 2 * j + 1);
    store(x + 2 * j, a * cos[j] - b * sin[j]);
    store(x + 2 * j + 1, b * cos[j] + a * sin[j]);
  }
}

int64_t position_at(const Tensor& positions, int64_t t) {
  const int64_t off = t * positions.stride(0);
  return positions.dtype() == DType::kI64 ? positions.data<int64_t>()[off]
                                          : positions.data<int32_t>()[off];
}

template <typename T>
void apply_typed(Tensor& x, const Tensor& positions, RopeStyle style, int64_t half,
                 const std::vector<float>& cos_table, const std::vector<float>& sin_table) {
  const int64_t tokens = x.size(0);
  const bool has_heads = x.ndim() == 3;
  const int64_t heads = has_heads ? x.size(1) : 1;
  const int64_t head_stride = has_heads ? x.stride(1) : 0;
  T* base = x.data<T>();
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t p = position_at(positions, t);
    const float* cos = cos_table.data() + p * half;
    const float* sin = sin_table.data() + p * half;
    for (int64_t h = 0; h < heads; ++h) {
      T* head = base + t * x.stride(0) + h * head_stride;
      if (style == RopeStyle::kRotateHalf) {
        rotate_half(head, cos, sin, half);
      } else {
        rotate_interleaved(head, cos, sin, half);
      }
    }
  }
}

}  // namespace

RopeCache::RopeCache(int64_t rotary_dim, int64_t max_position, double theta,
                     const RopeScaling& scaling)
    : rotary_dim_(rotary_dim),
      max_position_(max_position),
      inv_freq_(rope_inv_freq(rotary_dim, theta, scaling)),
      magnitude_scale_(rope_magnitude_scale(scaling)) {
  CTXPAR_CHECK(max_position >= 1, "RopeCache max_position {} must be >= 1", max_position);
  const int64_t half = rotary_dim / 2;
  cos_.resize(static_cast<size_t>(max_position * half));
  sin_.resize(static_cast<size_t>(max_position * half));
  for (int64_t p = 0; p < max_position; ++p) {
    for (int64_t j = 0; j < half; ++j) {
      const double angle = static_cast<double>(p) * inv_freq_[j];
      cos_[p * half + j] = static_cast<float>(std::cos(angle) * magnitude_scale_);
      sin_[p * half + j] = static_cast<float>(std::sin(angle) * magnitude_scale_);
    }
  }
}

void RopeCache::apply(Tensor& x, const Tensor& positions, RopeStyle style) const {
  CTXPAR_CHECK(x.defined() && (x.ndim() == 2 || x.ndim() == 3) &&
                   (x.dtype() == DType::kF32 || x.dtype() == DType::kBF16),
               "RoPE x must be float32 or bfloat16 [tokens, heads, D] or [tokens, D], got {}",
               x.defined() ? x.describe() : "an undefined tensor");
  CTXPAR_CHECK(x.size(-1) >= rotary_dim_ && x.stride(-1) == 1,
               "RoPE x {} needs a contiguous last dim of at least rotary_dim {} (last stride {})",
               x.describe(), rotary_dim_, x.stride(-1));
  CTXPAR_CHECK(positions.defined() && positions.ndim() == 1 && positions.size(0) == x.size(0) &&
                   (positions.dtype() == DType::kI32 || positions.dtype() == DType::kI64),
               "RoPE positions must be int32 or int64 [{}] (one per token of x {}), got {}",
               x.size(0), x.describe(),
               positions.defined() ? positions.describe() : "an undefined tensor");
  for (int64_t t = 0; t < x.size(0); ++t) {
    const int64_t p = position_at(positions, t);
    CTXPAR_CHECK(p >= 0 && p < max_position_,
                 "RoPE position {} of token {} is outside the cache's [0, {}); raise max_position",
                 p, t, max_position_);
  }
  const int64_t half = rotary_dim_ / 2;
  if (x.dtype() == DType::kF32) {
    apply_typed<float>(x, positions, style, half, cos_, sin_);
  } else {
    apply_typed<bf16>(x, positions, style, half, cos_, sin_);
  }
}

}  // namespace ctxpar::kernels
