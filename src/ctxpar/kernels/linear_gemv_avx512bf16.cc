// The decode GEMV over bf16 weights with AVX-512 BF16 dot products (GemvKernel::kAvx512Bf16,
// linear_gemv.h): x is rounded to bf16 in natural order, so a 64-byte weight vector feeds
// vdpbf16ps as loaded, one instruction per token, where the shift/mask path spends two
// conversions and two FMAs. The products are those of the f32 path (bf16 × bf16 is exact in
// f32); only the order of the f32 additions differs.
#if !defined(__AVX512BF16__) || !defined(__AVX512BW__)
#error "linear_gemv_avx512bf16.cc needs -mavx512bf16 -mavx512bw"
#endif

// Vec16's reduce_add4; also GCC 12's AVX-512 warning workaround.
#include "ctxpar/kernels/simd_avx512.h"

#include <algorithm>
#include <cstdint>

#include "ctxpar/kernels/linear_gemv.h"

namespace ctxpar::kernels::detail {
namespace {

constexpr int64_t kStep = 32;  // bf16 values per zmm
constexpr int kMaxT = 4;       // tokens per register block
// One token. On Intel cores rows one at a time, so contiguous rows are one sequential stream,
// each row requested kRowAhead values (6 KiB) ahead, running on into the next rows. Against
// other requests ahead (measured on an AMD EPYC Zen 5 VM, 1 thread, Llama-1B-shaped layers,
// kernels_linear_bench DecodeLinears): 33-38 GB/s, 27-30 for 4-row blocks (four streams) at
// 1 KiB, 30-31 at 4 KiB ahead. AMD cores (GemvArgs::intel_pattern false; Zen 5 was not measured
// so) take no requests ahead and read two streams: the rows of the first half of the range beside
// those of the second. On an AMD EPYC Zen 4 VM, 1 thread, the same layers read 0.82-0.86 of the
// read ceiling as one stream, 0.94-0.95 as two (three alternated runs; four streams 0.93-0.96;
// adjacent rows side by side 0.45-0.55, as the hardware prefetcher then follows neither), which is
// what the ceiling's own best loop does (two streams per thread); requests ahead cost there
// (one stream: 0.65-0.73 with them; two with 512 B ahead: 0.72). Each row's dot products
// alternate between two accumulators: with one, each 32-value step waits on the previous step's
// vdpbf16ps (a 4 KiB row is a chain of 64), which held one Zen 4 thread at 23.3-25.7 GB/s of
// weights against 26.1-28.5 with two (one stream; four chains 25.3-26.1).
constexpr int64_t kRowAhead = 3072;
// Several tokens: 4-row blocks, so each x vector is loaded once per 4 rows: one row at a time
// needs a load per dot product and ran 22 GB/s at 4 tokens and 12 at 8 against 27 and 19.
constexpr int kBlockRows = 4;
constexpr int64_t kBlockAhead = 512;
// On AMD cores the blocks' rows are requested 4 KiB ahead into L2 instead (GemvArgs::
// intel_pattern false): Zen 4 VM, 1 thread, DecodeLinears bf16 at 4 tokens 0.49 -> 0.69 of the
// read ceiling, at 8 tokens 0.41-0.44 -> 0.58-0.63; 1 KiB ahead into L2 0.64, 4 KiB into L1 0.50,
// none 0.53-0.58. One token on AMD gained nothing from requests into L2 (0.73-0.83 at 2, 6 or
// 16 KiB ahead against 0.76-0.77 without, noise-level) and keeps none.
constexpr int64_t kBlockAheadAmd = 2048;

inline __m512bh load_bf16x32(const uint16_t* p) {
  return (__m512bh)_mm512_loadu_si512(p);
}
// The first n (< 32) values, zeros after: a zero pair adds nothing to the dot product.
inline __m512bh load_bf16_head(const uint16_t* p, int64_t n) {
  return (__m512bh)_mm512_maskz_loadu_epi16(static_cast<__mmask32>((uint64_t{1} << n) - 1), p);
}

// y[t·ldy + r] = Σ_i x[t·k + i]·w[r·ldw + i] (+ bias[r]) for R rows and T tokens. Each row's
// bytes are requested kAhead values ahead (0: not at all), into L1 or into L2 (kToL2); near a
// row's end, in the row R rows on.
template <int R, int T, int64_t kAhead, bool kToL2 = false>
void dot_block(const uint16_t* x, int64_t k, const uint16_t* w, int64_t ldw, const float* bias,
               float* y, int64_t ldy) {
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  const int64_t full = k / kStep * kStep;
  for (int64_t i = 0; i < full; i += kStep) {
    __m512bh xv[T];
    for (int t = 0; t < T; ++t) xv[t] = load_bf16x32(x + t * k + i);
    for (int r = 0; r < R; ++r) {
      const uint16_t* row = w + r * ldw + i;
      if constexpr (kAhead > 0) {
        const uint16_t* ahead = i + kAhead < k ? row + kAhead : row + R * ldw + (kAhead - k);
        __builtin_prefetch(ahead, 0, kToL2 ? 2 : 3);
      }
      const __m512bh wv = load_bf16x32(row);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], wv, xv[t]);
    }
  }
  if (full < k) {
    const int64_t n = k - full;
    __m512bh xv[T];
    for (int t = 0; t < T; ++t) xv[t] = load_bf16_head(x + t * k + full, n);
    for (int r = 0; r < R; ++r) {
      const __m512bh wv = load_bf16_head(w + r * ldw + full, n);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_dpbf16_ps(acc[r][t], wv, xv[t]);
    }
  }
  for (int t = 0; t < T; ++t) {
    float sums[R];
    if constexpr (R == 4) {
      reduce_add4(simd::Vec16{acc[0][t]}, simd::Vec16{acc[1][t]}, simd::Vec16{acc[2][t]},
                  simd::Vec16{acc[3][t]}, sums);
    } else {
      for (int r = 0; r < R; ++r) sums[r] = _mm512_reduce_add_ps(acc[r][t]);
    }
    for (int r = 0; r < R; ++r) y[t * ldy + r] = bias != nullptr ? sums[r] + bias[r] : sums[r];
  }
}

// One token, R rows spaced `spacing` rows apart: y[r·spacing] = Σ_i x[i]·row_r[i]
// (+ bias[r·spacing]), row_r = w + r·spacing·ldw, the even and odd 32-value steps of each row in
// two accumulators (so every row's sum is the same bits for any R). The rows' bytes are requested
// kAhead values ahead (0: not at all), near a row's end in the row after it (ldw values on).
template <int R, int64_t kAhead>
void dot_rows(const uint16_t* x, int64_t k, const uint16_t* w, int64_t ldw, int64_t spacing,
              const float* bias, float* y) {
  __m512 even[R], odd[R];
  for (int r = 0; r < R; ++r) even[r] = odd[r] = _mm512_setzero_ps();
  const auto step = [&](int64_t i, __m512(&acc)[R]) {
    const __m512bh xv = load_bf16x32(x + i);
    for (int r = 0; r < R; ++r) {
      const uint16_t* row = w + r * spacing * ldw;
      if constexpr (kAhead > 0) {
        __builtin_prefetch(i + kAhead < k ? row + i + kAhead : row + ldw + (i + kAhead - k), 0, 3);
      }
      acc[r] = _mm512_dpbf16_ps(acc[r], load_bf16x32(row + i), xv);
    }
  };
  int64_t i = 0;
  for (; i + 2 * kStep <= k; i += 2 * kStep) {
    step(i, even);
    step(i + kStep, odd);
  }
  if (i + kStep <= k) {
    step(i, even);
    i += kStep;
  }
  if (i < k) {
    const __m512bh xv = load_bf16_head(x + i, k - i);
    for (int r = 0; r < R; ++r) {
      odd[r] = _mm512_dpbf16_ps(odd[r], load_bf16_head(w + r * spacing * ldw + i, k - i), xv);
    }
  }
  for (int r = 0; r < R; ++r) {
    const float sum = _mm512_reduce_add_ps(_mm512_add_ps(even[r], odd[r]));
    y[r * spacing] = bias != nullptr ? sum + bias[r * spacing] : sum;
  }
}

// Rows [o, o + R) for every token of a (two or more), up to kMaxT tokens per register block,
// the rows requested kAhead values ahead (into L2 with kToL2).
template <int R, int64_t kAhead, bool kToL2>
void block_rows(const GemvArgs& a, const uint16_t* x, const uint16_t* w, int64_t o) {
  for (int64_t t0 = 0; t0 < a.tokens; t0 += kMaxT) {
    const uint16_t* xt = x + t0 * a.k;
    const uint16_t* wo = w + o * a.ldw;
    const float* bias = a.bias ? a.bias + o : nullptr;
    float* yt = a.y + t0 * a.ldy + o;
    switch (std::min<int64_t>(kMaxT, a.tokens - t0)) {
      case 4:
        dot_block<R, 4, kAhead, kToL2>(xt, a.k, wo, a.ldw, bias, yt, a.ldy);
        break;
      case 3:
        dot_block<R, 3, kAhead, kToL2>(xt, a.k, wo, a.ldw, bias, yt, a.ldy);
        break;
      case 2:
        dot_block<R, 2, kAhead, kToL2>(xt, a.k, wo, a.ldw, bias, yt, a.ldy);
        break;
      default:
        dot_block<R, 1, kAhead, kToL2>(xt, a.k, wo, a.ldw, bias, yt, a.ldy);
        break;
    }
  }
}

// Every row of a (two or more tokens): kBlockRows-row blocks, then single rows.
template <int64_t kAhead, bool kToL2>
void all_block_rows(const GemvArgs& a, const uint16_t* x, const uint16_t* w) {
  int64_t o = 0;
  for (; o + kBlockRows <= a.n; o += kBlockRows) block_rows<kBlockRows, kAhead, kToL2>(a, x, w, o);
  for (; o < a.n; ++o) block_rows<1, kAhead, kToL2>(a, x, w, o);
}

}  // namespace

void gemv_bf16_avx512bf16(const GemvArgs& a) {
  const auto* x = static_cast<const uint16_t*>(a.xp);
  const auto* w = static_cast<const uint16_t*>(a.w);
  if (a.tokens == 1) {
    const auto bias = [&](int64_t o) { return a.bias ? a.bias + o : nullptr; };
    if (a.intel_pattern) {
      for (int64_t o = 0; o < a.n; ++o) {
        dot_rows<1, kRowAhead>(x, a.k, w + o * a.ldw, a.ldw, 1, bias(o), a.y + o);
      }
      return;
    }
    const int64_t half = a.n / 2;  // rows o and o + half side by side; an odd last row alone
    for (int64_t o = 0; o < half; ++o) {
      dot_rows<2, 0>(x, a.k, w + o * a.ldw, a.ldw, half, bias(o), a.y + o);
    }
    if (a.n % 2 == 1) {
      const int64_t o = a.n - 1;
      dot_rows<1, 0>(x, a.k, w + o * a.ldw, a.ldw, 1, bias(o), a.y + o);
    }
    return;
  }
  if (a.intel_pattern) {
    all_block_rows<kBlockAhead, false>(a, x, w);
  } else {
    all_block_rows<kBlockAheadAmd, true>(a, x, w);
  }
}

}  // namespace ctxpar::kernels::detail
