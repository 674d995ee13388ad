// Internal: the FP8 GEMV and dequantization loops as templates over a simd vector type V and a
// weight loader L. Included only by linear_fp8_kernel_{scalar,avx2,avx512}.cc; internal linkage.
//
// A loader provides:
//   kFactor              what its loads yield per e4m3 value (value · kFactor);
//   kChunk               bytes per GEMV load step (a multiple of V::kWidth dividing 128);
//   kPrefetch            bytes ahead in each row the GEMV prefetches (0: none);
//   load(p) → V          kWidth bytes widened to f32 in natural order (dequantize);
//   load_chunk(p, out)   kChunk bytes → kChunk / kWidth vectors in the loader's lane order;
//   scale_chunk(x, f, xs) xs (kChunk values in that lane order) = x (natural order) · f.
#pragma once

#include <cstdint>

#include "ctxpar/kernels/linear_fp8_kernel.h"

namespace ctxpar::kernels::detail {
namespace {

// R rows `stride` rows apart from row o (o, o + stride, ...) × M tokens: R·M accumulators, the
// chunk's widened vectors of one row at a time; each activation vector comes from L1 (xs is
// at most a few tokens × k floats).
template <class V, class L, int R, int M>
void gemv_rows(const float* xs, int64_t ldxs, const uint8_t* w, int64_t ldw, int64_t k, int64_t o,
               int64_t stride, float* y, int64_t ldy) {
  constexpr int kW = V::kWidth, kC = L::kChunk, kN = kC / kW;
  const float* table = e4m3_table();
  V acc[R][M];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < M; ++t) acc[r][t] = V::zero();
  }
  const uint8_t* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = w + (o + r * stride) * ldw;
  int64_t i = 0;
  for (; i + kC <= k; i += kC) {
    for (int r = 0; r < R; ++r) {
      if constexpr (L::kPrefetch > 0) {
        // Near a row's end, the next row, which this register row takes next: short rows (k
        // of 1536 or 2048) otherwise start with demand misses (x86 prefetches of addresses
        // past the weight do not fault).
        const int64_t ahead = i + L::kPrefetch;
        __builtin_prefetch(ahead < k ? rows[r] + ahead : rows[r] + ldw + (ahead - k));
      }
      V wv[kN];
      L::load_chunk(rows[r] + i, wv);
      for (int t = 0; t < M; ++t) {
        for (int n = 0; n < kN; ++n) {
          acc[r][t] = mul_add(wv[n], V::load(xs + t * ldxs + i + n * kW), acc[r][t]);
        }
      }
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < M; ++t) {
      float sum = reduce_add(acc[r][t]);
      for (int64_t j = i; j < k; ++j) sum += table[rows[r][j]] * L::kFactor * xs[t * ldxs + j];
      y[t * ldy + o + r * stride] = sum;
    }
  }
}

template <class V, class L, int R, int M>
void gemv_tokens(const float* xs, int64_t ldxs, const uint8_t* w, int64_t ldw, int64_t k,
                 int64_t r0, int64_t nr, float* y, int64_t ldy) {
  // Each register row walks its own contiguous run of `len` rows: R sequential streams
  // through the row block rather than R short ones restarted every R rows.
  const int64_t len = nr / R;
  for (int64_t j = 0; j < len; ++j) gemv_rows<V, L, R, M>(xs, ldxs, w, ldw, k, r0 + j, len, y, ldy);
  for (int64_t o = r0 + len * R; o < r0 + nr; ++o)
    gemv_rows<V, L, 1, M>(xs, ldxs, w, ldw, k, o, 1, y, ldy);
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

template <class L>
void scale_x(const float* x, int64_t ldx, int tokens, int64_t k, const float* scale, float* xs) {
  constexpr int kC = L::kChunk;
  const float unfold = 1.0f / L::kFactor;  // a power of two: exact
  for (int t = 0; t < tokens; ++t) {
    const float* xt = x + t * ldx;
    float* st = xs + t * k;
    int64_t i = 0;
    for (; i + kC <= k; i += kC) L::scale_chunk(xt + i, scale[i / kFp8Block] * unfold, st + i);
    for (; i < k; ++i) st[i] = xt[i] * (scale[i / kFp8Block] * unfold);
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

// A loader whose GEMV chunk is one vector in natural order (the scalar and AVX2 variants).
template <class V, class Load>
struct NaturalOrder : Load {
  static constexpr int kChunk = V::kWidth;
  static constexpr int kPrefetch = 0;
  static void load_chunk(const uint8_t* p, V* out) { out[0] = Load::load(p); }
  static void scale_chunk(const float* x, float f, float* xs) {
    (V::load(x) * V::set1(f)).store(xs);
  }
};

template <class V, class L, int R1, int R, int MaxM>
constexpr Fp8Kernels make_fp8_kernels() {
  static_assert(kFp8Block % L::kChunk == 0 && L::kChunk % V::kWidth == 0);
  return Fp8Kernels{L::kFactor, &scale_x<L>, &gemv<V, L, R1, R, MaxM>, &dequantize<V, L>};
}

}  // namespace
}  // namespace ctxpar::kernels::detail
