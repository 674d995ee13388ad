// AVX2 variant of int8_weight_gemv; this file alone is compiled with -mavx2.
#include <immintrin.h>

#include "ctxpar/kernels/linear_int8_gemv.h"

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

// kRows weight rows against one q row. vpmaddwd multiplies int16 pairs into int32 sums
// (|pair| <= 2·127² fits easily), so nothing saturates.
template <int kRows>
void rows_dot(const int8_t* qrow, const int8_t* w, int64_t ldw, int64_t k, int32_t* out) {
  __m256i acc[kRows];
  for (int r = 0; r < kRows; ++r) acc[r] = _mm256_setzero_si256();
  int64_t i = 0;
  for (; i + 16 <= k; i += 16) {
    const __m256i qv = load_s8x16(qrow + i);
    for (int r = 0; r < kRows; ++r) {
      acc[r] = _mm256_add_epi32(acc[r], _mm256_madd_epi16(qv, load_s8x16(w + r * ldw + i)));
    }
  }
  for (int r = 0; r < kRows; ++r) {
    int32_t sum = horizontal_sum(acc[r]);
    for (int64_t j = i; j < k; ++j) sum += int32_t{qrow[j]} * int32_t{w[r * ldw + j]};
    out[r] = sum;
  }
}

}  // namespace

void int8_weight_gemv_avx2(const int8_t* q, int64_t ldq, int64_t tokens, const int8_t* w,
                           int64_t ldw, int64_t k, int64_t n, const float* column_scale, float* y,
                           int64_t ldy) {
  constexpr int kRows = 4;
  int32_t out[kRows];
  int64_t o = 0;
  for (; o + kRows <= n; o += kRows) {
    for (int64_t t = 0; t < tokens; ++t) {
      rows_dot<kRows>(q + t * ldq, w + o * ldw, ldw, k, out);
      for (int r = 0; r < kRows; ++r) {
        y[t * ldy + o + r] = static_cast<float>(out[r]) * column_scale[o + r];
      }
    }
  }
  for (; o < n; ++o) {
    for (int64_t t = 0; t < tokens; ++t) {
      rows_dot<1>(q + t * ldq, w + o * ldw, ldw, k, out);
      y[t * ldy + o] = static_cast<float>(out[0]) * column_scale[o];
    }
  }
}

}  // namespace ctxpar::kernels::detail
