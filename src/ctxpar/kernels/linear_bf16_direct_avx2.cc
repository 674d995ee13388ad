// AVX2 + FMA variant of bf16_weight_matmul; this file alone is compiled with -mavx2 -mfma.
#include <immintrin.h>

#include "ctxpar/kernels/linear_bf16_direct.h"

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

// A kRows × kTokens block of y: each weight vector is converted once and used for kTokens
// tokens, each x vector is loaded once and used for kRows rows. kRows·kTokens accumulators +
// kTokens x vectors + 1 weight vector fit the 16 ymm registers for 4 × 3.
template <int kRows, int kTokens>
void block_dot(const float* x, int64_t ldx, const bf16* w, int64_t ldw, int64_t k, float* y,
               int64_t ldy) {
  __m256 acc[kRows][kTokens];
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    __m256 xv[kTokens];
    for (int t = 0; t < kTokens; ++t) xv[t] = _mm256_loadu_ps(x + t * ldx + i);
    for (int r = 0; r < kRows; ++r) {
      const __m256 wv = load_bf16x8(w + r * ldw + i);
      for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kTokens; ++t) {
      float sum = horizontal_sum(acc[r][t]);
      for (int64_t j = i; j < k; ++j) sum += bf16::to_f32(w[r * ldw + j].bits) * x[t * ldx + j];
      y[t * ldy + r] = sum;
    }
  }
}

template <int kRows>
void rows_block(const float* x, int64_t ldx, int64_t tokens, const bf16* w, int64_t ldw, int64_t k,
                float* y, int64_t ldy) {
  int64_t t = 0;
  for (; t + 3 <= tokens; t += 3)
    block_dot<kRows, 3>(x + t * ldx, ldx, w, ldw, k, y + t * ldy, ldy);
  if (tokens - t == 2) block_dot<kRows, 2>(x + t * ldx, ldx, w, ldw, k, y + t * ldy, ldy);
  if (tokens - t == 1) block_dot<kRows, 1>(x + t * ldx, ldx, w, ldw, k, y + t * ldy, ldy);
}

}  // namespace

void bf16_weight_matmul_avx2(const float* x, int64_t ldx, int64_t tokens, const bf16* w,
                             int64_t ldw, int64_t k, int64_t n, float* y, int64_t ldy) {
  constexpr int kRows = 4;
  int64_t o = 0;
  // Token loop inside the row block: the block's kRows·k weights stay in L1/L2 across tokens.
  for (; o + kRows <= n; o += kRows)
    rows_block<kRows>(x, ldx, tokens, w + o * ldw, ldw, k, y + o, ldy);
  for (; o < n; ++o) rows_block<1>(x, ldx, tokens, w + o * ldw, ldw, k, y + o, ldy);
}

}  // namespace ctxpar::kernels::detail
