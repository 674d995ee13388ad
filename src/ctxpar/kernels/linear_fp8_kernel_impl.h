// Internal: the FP8 GEMV and dequantization loops as templates over a simd vector type V and a
// weight loader L (L::load(const uint8_t* p) → V: kWidth e4m3 bytes widened to f32, times
// L::kFactor). Included only by linear_fp8_kernel_{scalar,avx2,avx512}.cc; internal linkage.
#pragma once

#include <cstdint>

#include "ctxpar/kernels/linear_fp8_kernel.h"

namespace ctxpar::kernels::detail {
namespace {

// R rows × M tokens: R·M accumulators, R widened weight vectors, one activation vector.
template <class V, class L, int R, int M>
void gemv_rows(const float* xs, int64_t ldxs, const uint8_t* w, int64_t ldw, int64_t k, int64_t o,
               float* y, int64_t ldy) {
  constexpr int kW = V::kWidth;
  const float* table = e4m3_table();
  V acc[R][M];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < M; ++t) acc[r][t] = V::zero();
  }
  const uint8_t* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = w + (o + r) * ldw;
  int64_t i = 0;
  for (; i + kW <= k; i += kW) {
    V wv[R];
    for (int r = 0; r < R; ++r) wv[r] = L::load(rows[r] + i);
    for (int t = 0; t < M; ++t) {
      const V xv = V::load(xs + t * ldxs + i);
      for (int r = 0; r < R; ++r) acc[r][t] = mul_add(wv[r], xv, acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < M; ++t) {
      float sum = reduce_add(acc[r][t]);
      for (int64_t j = i; j < k; ++j) sum += table[rows[r][j]] * L::kFactor * xs[t * ldxs + j];
      y[t * ldy + o + r] = sum;
    }
  }
}

template <class V, class L, int R, int M>
void gemv_tokens(const float* xs, int64_t ldxs, const uint8_t* w, int64_t ldw, int64_t k,
                 int64_t r0, int64_t nr, float* y, int64_t ldy) {
  int64_t o = r0;
  for (; o + R <= r0 + nr; o += R) gemv_rows<V, L, R, M>(xs, ldxs, w, ldw, k, o, y, ldy);
  for (; o < r0 + nr; ++o) gemv_rows<V, L, 1, M>(xs, ldxs, w, ldw, k, o, y, ldy);
}

// MaxM tokens at a time (what the registers hold); more tokens take further passes. One token
// runs R1 rows per iteration (more independent FMA chains), several tokens R rows.
template <class V, class L, int R1, int R, int MaxM>
void gemv(const float* xs, int64_t ldxs, int tokens, const uint8_t* w, int64_t ldw, int64_t k,
          int64_t r0, int64_t nr, float* y, int64_t ldy) {
  for (int t0 = 0; t0 < tokens; t0 += MaxM) {
    const float* x = xs + t0 * ldxs;
    float* yt = y + t0 * ldy;
    switch (tokens - t0 >= MaxM ? MaxM : tokens - t0) {
      case 1:
        gemv_tokens<V, L, R1, 1>(x, ldxs, w, ldw, k, r0, nr, yt, ldy);
        break;
      case 2:
        gemv_tokens<V, L, R, 2>(x, ldxs, w, ldw, k, r0, nr, yt, ldy);
        break;
      case 3:
        if constexpr (MaxM >= 3) gemv_tokens<V, L, R, 3>(x, ldxs, w, ldw, k, r0, nr, yt, ldy);
        break;
      default:
        if constexpr (MaxM >= 4) gemv_tokens<V, L, R, 4>(x, ldxs, w, ldw, k, r0, nr, yt, ldy);
        break;
    }
  }
}

template <class V, class L>
void dequantize(const uint8_t* w, int64_t ldw, const float* scale, int64_t lds, int64_t k,
                int64_t r0, int64_t nr, float* out, int64_t ldo) {
  constexpr int kW = V::kWidth;
  const float* table = e4m3_table();
  for (int64_t r = 0; r < nr; ++r) {
    const uint8_t* row = w + (r0 + r) * ldw;
    const float* s = scale + ((r0 + r) / kFp8Block) * lds;
    float* dst = out + r * ldo;
    for (int64_t b = 0; b * kFp8Block < k; ++b) {
      const int64_t end = b * kFp8Block + kFp8Block < k ? b * kFp8Block + kFp8Block : k;
      const V sv = V::set1(s[b] / L::kFactor);
      int64_t i = b * kFp8Block;
      for (; i + kW <= end; i += kW) (L::load(row + i) * sv).store(dst + i);
      for (; i < end; ++i) dst[i] = table[row[i]] * s[b];
    }
  }
}

template <class V, class L, int R1, int R, int MaxM>
constexpr Fp8Kernels make_fp8_kernels() {
  return Fp8Kernels{L::kFactor, &gemv<V, L, R1, R, MaxM>, &dequantize<V, L>};
}

}  // namespace
}  // namespace ctxpar::kernels::detail
