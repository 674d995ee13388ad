// AVX2 variant of int8_weight_matmul; this file alone is compiled with -mavx2.
#include <immintrin.h>

#include "ctxpar/kernels/linear_int8_direct.h"

namespace ctxpar::kernels::detail {
namespace {

// 16 int8 → 16 int16.
inline __m256i load_s8x16(const int8_t* p) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

inline int32_t horizontal_sum(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(s);
}

// A kRows × kTokens block of y. vpmaddwd multiplies int16 pairs into int32 sums (|pair| <=
// 2·127² fits easily), so nothing saturates. Each widened weight vector serves kTokens tokens,
// each widened q vector kRows rows; 4 × 3 fills the 16 ymm registers.
template <int kRows, int kTokens>
void block_dot(const int8_t* q, int64_t ldq, const int8_t* w, int64_t ldw, int64_t k,
               const float* column_scale, float* y, int64_t ldy) {
  __m256i acc[kRows][kTokens];
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm256_setzero_si256();
  }
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    __m256i qv[kTokens];
    for (int t = 0; t < kTokens; ++t) qv[t] = load_s8x16(q + t * ldq + i);
    for (int r = 0; r < kRows; ++r) {
      const __m256i wv = load_s8x16(w + r * ldw + i);
      for (int t = 0; t < kTokens; ++t) {
        acc[r][t] = _mm256_add_epi32(acc[r][t], _mm256_madd_epi16(wv, qv[t]));
      }
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kTokens; ++t) {
      int32_t sum = horizontal_sum(acc[r][t]);
      for (int64_t j = i; j < k; ++j) sum += int32_t{q[t * ldq + j]} * int32_t{w[r * ldw + j]};
      y[t * ldy + r] = static_cast<float>(sum) * column_scale[r];
    }
  }
}

template <int kRows>
void rows_block(const int8_t* q, int64_t ldq, int64_t tokens, const int8_t* w, int64_t ldw,
                int64_t k, const float* column_scale, float* y, int64_t ldy) {
  int64_t t = 0;
  for (; t + 3 <= tokens; t += 3) {
    block_dot<kRows, 3>(q + t * ldq, ldq, w, ldw, k, column_scale, y + t * ldy, ldy);
  }
  if (tokens - t == 2)
    block_dot<kRows, 2>(q + t * ldq, ldq, w, ldw, k, column_scale, y + t * ldy, ldy);
  if (tokens - t == 1)
    block_dot<kRows, 1>(q + t * ldq, ldq, w, ldw, k, column_scale, y + t * ldy, ldy);
}

}  // namespace

void int8_weight_matmul_avx2(const int8_t* q, int64_t ldq, int64_t tokens, const int8_t* w,
                             int64_t ldw, int64_t k, int64_t n, const float* column_scale, float* y,
                             int64_t ldy) {
  constexpr int kRows = 4;
  int64_t o = 0;
  for (; o + kRows <= n; o += kRows) {
    rows_block<kRows>(q, ldq, tokens, w + o * ldw, ldw, k, column_scale + o, y + o, ldy);
  }
  for (; o < n; ++o)
    rows_block<1>(q, ldq, tokens, w + o * ldw, ldw, k, column_scale + o, y + o, ldy);
}

}  // namespace ctxpar::kernels::detail
