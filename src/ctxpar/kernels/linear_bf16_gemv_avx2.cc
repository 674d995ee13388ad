// AVX2 + FMA variant of bf16_weight_gemv; this file alone is compiled with -mavx2 -mfma.
#include <immintrin.h>

#include "ctxpar/kernels/linear_bf16_gemv.h"

namespace ctxpar::kernels::detail {
namespace {

// 8 bf16 → 8 f32: bf16 is the high half of an f32, so widen and shift.
inline __m256 load_bf16x8(const bf16* p) {
  const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
}

inline float horizontal_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// kRows weight rows against one x row: each x vector is loaded once and reused kRows times,
// two accumulators per row hide the FMA latency.
template <int kRows>
void rows_dot(const float* xrow, const bf16* w, int64_t ldw, int64_t k, float* out) {
  __m256 acc0[kRows], acc1[kRows];
  for (int r = 0; r < kRows; ++r) acc0[r] = acc1[r] = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m256 x0 = _mm256_loadu_ps(xrow + i);
    const __m256 x1 = _mm256_loadu_ps(xrow + i + 8);
    for (int r = 0; r < kRows; ++r) {
      acc0[r] = _mm256_fmadd_ps(load_bf16x8(w + r * ldw + i), x0, acc0[r]);
      acc1[r] = _mm256_fmadd_ps(load_bf16x8(w + r * ldw + i + 8), x1, acc1[r]);
    }
  }
  if (i + 8 <= k) {
    const __m256 x0 = _mm256_loadu_ps(xrow + i);
    for (int r = 0; r < kRows; ++r) {
      acc0[r] = _mm256_fmadd_ps(load_bf16x8(w + r * ldw + i), x0, acc0[r]);
    }
    i += 8;
  }
  for (int r = 0; r < kRows; ++r) {
    float sum = horizontal_sum(_mm256_add_ps(acc0[r], acc1[r]));
    for (int64_t j = i; j < k; ++j) sum += bf16::to_f32(w[r * ldw + j].bits) * xrow[j];
    out[r] = sum;
  }
}

}  // namespace

void bf16_weight_gemv_avx2(const float* x, int64_t ldx, int64_t tokens, const bf16* w, int64_t ldw,
                           int64_t k, int64_t n, float* y, int64_t ldy) {
  constexpr int kRows = 4;
  float out[kRows];
  int64_t o = 0;
  // Token loop inside the row block: the block's kRows·k weights stay in L1/L2 across tokens.
  for (; o + kRows <= n; o += kRows) {
    for (int64_t t = 0; t < tokens; ++t) {
      rows_dot<kRows>(x + t * ldx, w + o * ldw, ldw, k, out);
      for (int r = 0; r < kRows; ++r) y[t * ldy + o + r] = out[r];
    }
  }
  for (; o < n; ++o) {
    for (int64_t t = 0; t < tokens; ++t) {
      rows_dot<1>(x + t * ldx, w + o * ldw, ldw, k, out);
      y[t * ldy + o] = out[0];
    }
  }
}

}  // namespace ctxpar::kernels::detail
