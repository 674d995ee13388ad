// Internal: the decode GEMV (linear_gemv.h) as a template over a simd vector type V (simd.h)
// and the weight element type (float, or uint16_t holding bf16 bits). Included only by
// linear_gemv_{scalar,avx2,avx512}.cc; internal linkage keeps the per-ISA copies apart.
// gemv_rows takes any token count; gemv_bf16_one_token one token over bf16 weights.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>

#include "ctxpar/core/half.h"
#include "ctxpar/kernels/linear_gemv.h"

namespace ctxpar::kernels::detail {
namespace {

// Weight rows per register block: 8 with 16-lane vectors, 4 with 8-lane ones (16 registers).
// On an Intel Xeon VM (AVX-512, AMX), 1 thread, Llama-1B-shaped bf16 layers
// (kernels_linear_bench DecodeLinears tokens:1), 8 rows read at 0.97-0.99 of the f32 weights'
// rate against 0.95 for 4 rows (2 rows: 0.93-0.97): eight streams in flight per core.
template <class V>
constexpr int gemv_rows_per_block() {
  return V::kWidth >= 16 ? 8 : 4;
}
static_assert(kGemvRowBlock % 8 == 0, "pool tasks split evenly into the register rows' streams");
// Prefetch distance in each weight row: far enough ahead to cover DRAM latency for the
// streams of a block, near enough to stay within what the L1/L2 can hold until used. bf16
// rows 512 bytes: on an AMD EPYC VM (AVX2, 1 thread) 21 GB/s against 19.5 at 1 KiB and 19 at
// 256 bytes; on an Intel Xeon VM (AVX-512, AMX) decode of the bench/compare model 6.64 / 12.80
// tok/s (1 / 2 threads, means of 5 / 6 alternated runs) against 6.56 / 12.58 at 1 KiB;
// kernels_linear_bench DecodeLinears 0.951 / 0.943 of the read ceiling against 0.948 / 0.934
// (means of 4), 0.77 / 0.79 at 256 bytes; with the rows read as streams (gemv_rows), 512
// bytes still read best there (0.94 against 0.89 at 256, 0.92 at 1 KiB, 0.91 at 2 KiB).
// f32 rows 1 KiB (tuned on that Xeon VM).
template <class WT>
constexpr int64_t gemv_prefetch_bytes() {
  return sizeof(WT) == 2 ? 512 : 1024;
}
// bf16 rows on AMD cores (GemvArgs::intel_pattern false) are requested 2 KiB ahead: on an AMD
// EPYC Zen 4 VM held to AVX2, kernels_linear_bench DecodeLinears, three alternated runs, GB/s
// of weights at 4 / 8 tokens: 1 thread 17.4-17.6 / 9.5-9.9 against 10.0-12.1 / 7.0-7.8 at 512
// bytes, 2 threads 27.0-29.8 / 16.0-18.4 against 21.3-22.2 / 13.3-15.0; 4 and 8 KiB ahead
// read about the same (1 thread 16.7-18.1 / 8.0-9.7), 256 bytes into L1 14.1-15.2 / 9.1-9.4,
// no requests 13.2-14.2 / 9.0-9.1.
constexpr int64_t kGemvAmdBf16PrefetchBytes = 2048;

inline float gemv_load_one(const float* p) {
  return *p;
}
inline float gemv_load_one(const uint16_t* p) {
  return bf16::to_f32(*p);
}

template <class V>
inline void gemv_load_pair(const float* p, V& a, V& b) {
  a = V::load(p);
  b = V::load(p + V::kWidth);
}
template <class V>
inline void gemv_load_pair(const uint16_t* p, V& a, V& b) {
  V::load_bf16_pair(p, a, b);
}

// For R rows spaced `stride` rows apart (row r is weight row r·stride) and T tokens:
// y[t·ldy + r·stride] = Σ_i x[t·k + i]·w[r·stride·ldw + i] (+ bias[r·stride]).
template <class V, class WT, int64_t kAheadBytes, int R, int T>
inline void gemv_block(const float* x, int64_t k, const WT* w, int64_t ldw, int64_t stride,
                       const float* bias, float* y, int64_t ldy) {
  constexpr int kW = V::kWidth;
  constexpr int kP = 2 * kW;
  constexpr int64_t kAhead = kAheadBytes / static_cast<int64_t>(sizeof(WT));
  V acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = V::zero();
  }
  const int64_t steps = k / kP;
  for (int64_t p = 0; p < steps; ++p) {
    const int64_t i = p * kP;
    V xa[T], xb[T];
    for (int t = 0; t < T; ++t) {
      xa[t] = V::load(x + t * k + i);
      xb[t] = V::load(x + t * k + i + kW);
    }
    for (int r = 0; r < R; ++r) {
      const WT* row = w + r * stride * ldw + i;
      // One request per cache line: a pair step of bf16 (or half of one of f32) is 64 bytes
      // for 16-lane vectors; narrower vectors request a line twice, which is harmless. Near a
      // row's end, the head of the next row, which this register row takes next (x86
      // prefetches past the weight do not fault). Into L2 (prefetcht1): 8 rows × 512 bytes
      // ahead are more lines than the L1 has fill buffers; on an Intel Xeon VM (AVX-512,
      // AMX) the Llama-1B-shaped linears read 0.5-1% faster than with prefetcht0 (alternated
      // in one process, 1 and 2 threads; prefetchnta reads a third as fast).
      __builtin_prefetch(i + kAhead < k ? row + kAhead : row + ldw + (kAhead - k), 0, 2);
      V wa, wb;
      gemv_load_pair(row, wa, wb);
      for (int t = 0; t < T; ++t) {
        acc[r][t] = mul_add(wa, xa[t], acc[r][t]);
        acc[r][t] = mul_add(wb, xb[t], acc[r][t]);
      }
    }
  }
  for (int t = 0; t < T; ++t) {
    float sums[R];
    if constexpr (R == 4) {
      reduce_add4(acc[0][t], acc[1][t], acc[2][t], acc[3][t], sums);
    } else {
      for (int r = 0; r < R; ++r) sums[r] = reduce_add(acc[r][t]);
    }
    for (int r = 0; r < R; ++r) {
      // Past the last full pair step x and w are both in natural order.
      for (int64_t i = steps * kP; i < k; ++i)
        sums[r] += x[t * k + i] * gemv_load_one(w + r * stride * ldw + i);
      const int64_t o = r * stride;
      y[t * ldy + o] = bias != nullptr ? sums[r] + bias[o] : sums[r];
    }
  }
}

// Token blocks of up to kMaxT tokens: 16-lane vectors have registers for 16 accumulators
// (8 rows × 2 tokens, 4 × 4) beside x and w, 8-lane ones (16 registers) for 4 × 2.
template <class V>
constexpr int gemv_max_tokens() {
  return V::kWidth >= 16 ? 4 : 2;
}

// R rows × T tokens in register blocks of at most 16 accumulators: 8 rows × 3 or 4 tokens go as
// two 4-row halves.
template <class V, class WT, int64_t kAheadBytes, int R, int T>
inline void gemv_block_fit(const float* x, int64_t k, const WT* w, int64_t ldw, int64_t stride,
                           const float* bias, float* y, int64_t ldy) {
  if constexpr (R * T > 16) {
    constexpr int kHalf = R / 2;
    const int64_t half = kHalf * stride;  // rows to the second half's first row
    gemv_block<V, WT, kAheadBytes, kHalf, T>(x, k, w, ldw, stride, bias, y, ldy);
    gemv_block<V, WT, kAheadBytes, kHalf, T>(
        x, k, w + half * ldw, ldw, stride, bias != nullptr ? bias + half : nullptr, y + half, ldy);
  } else {
    gemv_block<V, WT, kAheadBytes, R, T>(x, k, w, ldw, stride, bias, y, ldy);
  }
}

template <class V, class WT, int64_t kAheadBytes, int R>
inline void gemv_row_block(const float* x, int64_t tokens, int64_t k, const WT* w, int64_t ldw,
                           int64_t stride, const float* bias, float* y, int64_t ldy) {
  constexpr int kMaxT = gemv_max_tokens<V>();
  for (int64_t t0 = 0; t0 < tokens; t0 += kMaxT) {
    const float* xt = x + t0 * k;
    float* yt = y + t0 * ldy;
    switch (std::min<int64_t>(kMaxT, tokens - t0)) {
      case 4:
        if constexpr (kMaxT >= 4)
          gemv_block_fit<V, WT, kAheadBytes, R, 4>(xt, k, w, ldw, stride, bias, yt, ldy);
        break;
      case 3:
        if constexpr (kMaxT >= 3)
          gemv_block_fit<V, WT, kAheadBytes, R, 3>(xt, k, w, ldw, stride, bias, yt, ldy);
        break;
      case 2:
        gemv_block<V, WT, kAheadBytes, R, 2>(xt, k, w, ldw, stride, bias, yt, ldy);
        break;
      default:
        gemv_block<V, WT, kAheadBytes, R, 1>(xt, k, w, ldw, stride, bias, yt, ldy);
        break;
    }
  }
}

template <class V, class WT, int64_t kAheadBytes>
void gemv_rows_as(const GemvArgs& a) {
  const auto* xp = static_cast<const float*>(a.xp);
  const WT* w = static_cast<const WT*>(a.w);
  constexpr int kRows = gemv_rows_per_block<V>();
  // Each register row walks its own contiguous run of `len` rows, so the weights are read as
  // kRows long sequential streams. Blocks of kRows adjacent rows instead start kRows new short
  // streams (a 2048-wide bf16 row is one 4 KiB page) every block: on an Intel Xeon VM
  // (AVX-512, AMX) a Llama-1B-shaped decode's linears read 0.947-0.949 against 0.925-0.929 of
  // the read ceiling with 1 thread, 0.944-0.966 against 0.922-0.941 with 2 (alternated in
  // one process). Rows outermost: a block's weights come from DRAM once, and from L1/L2 for
  // later tokens.
  const int64_t len = a.n / kRows;
  for (int64_t j = 0; j < len; ++j) {
    gemv_row_block<V, WT, kAheadBytes, kRows>(xp, a.tokens, a.k, w + j * a.ldw, a.ldw, len,
                                              a.bias ? a.bias + j : nullptr, a.y + j, a.ldy);
  }
  for (int64_t o = len * kRows; o < a.n; ++o) {
    gemv_row_block<V, WT, kAheadBytes, 1>(xp, a.tokens, a.k, w + o * a.ldw, a.ldw, 1,
                                          a.bias ? a.bias + o : nullptr, a.y + o, a.ldy);
  }
}

template <class V, class WT>
void gemv_rows(const GemvArgs& a) {
  if constexpr (std::is_same_v<WT, uint16_t>) {
    if (!a.intel_pattern) {
      gemv_rows_as<V, WT, kGemvAmdBf16PrefetchBytes>(a);
      return;
    }
  }
  gemv_rows_as<V, WT, gemv_prefetch_bytes<WT>()>(a);
}

// One token, bf16 weights (batch-1 decode, which reads every weight per token), tuned as a read
// loop: the rows are read as a few streams (each a contiguous run of the rows), four 64-byte
// lines per stream per step, each line prefetched into L1 some bytes ahead, and each row's sum
// stored past the caches (movnti). The pattern is the vendor's (GemvArgs::intel_pattern):
// - Intel: two streams, 512 bytes ahead, 8 (16 lanes) or 4 (8 lanes) accumulators per stream.
//   On an Intel Xeon VM (AVX-512, AMX), every linear of the bench/compare model in turn,
//   against a 2-stream prefetching read loop in the same process (a throwaway driver, best of 5
//   passes): this kernel 0.97-0.99 with 1 and 2 threads; gemv_rows' 8 streams of one line,
//   prefetching into L2, 0.83-0.89; two streams of one line 0.87-0.91, four or more streams into
//   L1 0.67-0.75 (more lines ahead than the L1 has miss buffers). Held to AVX2 there
//   (CTXPAR_ISA=avx2, kernels_linear_bench DecodeLinears tokens:1): 0.95-0.99 / 0.94-0.96 (1 / 2
//   threads) where gemv_rows' 4 streams read 0.79-0.84 / 0.83-0.94.
// - AMD: four streams, 256 bytes ahead, 2 accumulators per stream (eight chains, what the FMA
//   latency needs; four per stream would not fit AVX2's 16 registers). On an AMD EPYC Zen 4 VM
//   held to AVX2, 1 thread, DecodeLinears tokens:1 in five alternated runs: 20.3-29.0 GB/s of
//   weights (four of five 26.0-29.0) against 19.8-21.7 with Intel's pattern; four streams
//   without requests 18.9-27.1, two streams without 23.3-23.6 (two runs); decode of the
//   bench/compare model (`ctxpar bench`, 1 thread, three alternated runs) 9.9-10.5 tok/s against
//   8.5-8.8. The 16-lane kernel takes the same pattern on AMD unmeasured: the AMD CPUs with
//   AVX-512 so far (Zen 4, Zen 5) have fast dot products and run kAvx512Bf16 instead.
// Plain stores of the sums cost 5-7% on the Xeon, once per output line (storing into a line
// that stays in L1 costs nothing; neither prefetchw nor prefetcht0 of the next output line
// helped), so the sums bypass the caches.
struct OneTokenPattern {
  int streams;
  int64_t ahead_values;  // bf16 values requested ahead
};
constexpr int64_t kLineValues = 32;               // bf16 values per 64-byte line
constexpr int64_t kStepValues = 4 * kLineValues;  // per stream per step
constexpr OneTokenPattern kOneTokenIntel{2, 512 / 2};
constexpr OneTokenPattern kOneTokenAmd{4, 256 / 2};

// Accumulators per stream: an even and an odd sum per line with 16-lane vectors (32
// registers); with 8-lane ones (16 registers) the step's 8 pair steps share 4.
template <class V>
constexpr int one_token_accumulators(const OneTokenPattern& pattern) {
  if (pattern.streams > 2) return 2;
  return V::kWidth >= 16 ? 8 : 4;
}

// sums[s] = Σ_i x[i]·w[s·stride·ldw + i] for S rows spaced `stride` rows apart; x in pair lane
// order over full pair steps (2·kWidth values), natural order after (gemv_prepare_x). Every
// line is requested kPattern.ahead_values ahead.
template <class V, OneTokenPattern kPattern, int S>
inline void one_token_rows(const float* x, int64_t k, const uint16_t* w, int64_t ldw,
                           int64_t stride, float* sums) {
  constexpr int64_t kP = 2 * V::kWidth;            // values per pair step
  constexpr int kPairs = kStepValues / kP;         // pair steps per stream per step
  constexpr int kPairsPerLine = kLineValues / kP;  // 1 (16 lanes) or 2 (8 lanes)
  constexpr int kAcc = one_token_accumulators<V>(kPattern);
  constexpr int64_t kAhead = kPattern.ahead_values;
  static_assert(kAcc % 2 == 0 && kAcc <= 2 * kPairs);
  V acc[S][kAcc];
  for (int s = 0; s < S; ++s) {
    for (int u = 0; u < kAcc; ++u) acc[s][u] = V::zero();
  }
  int64_t i = 0;
  for (; i + kStepValues <= k; i += kStepValues) {
    // Near a row's end, the head of the next row, which this stream reads next (x86
    // prefetches past the weight do not fault).
    const int64_t ahead = i + kAhead < k ? kAhead : ldw - k + kAhead;
    for (int s = 0; s < S; ++s) {
      const uint16_t* row = w + s * stride * ldw + i;
      for (int u = 0; u < kPairs; ++u) {
        const uint16_t* p = row + u * kP;
        if (u % kPairsPerLine == 0) __builtin_prefetch(p + ahead, 0, 3);
        V even, odd;
        V::load_bf16_pair(p, even, odd);
        const int e = (2 * u) % kAcc;
        acc[s][e] = mul_add(even, V::load(x + i + u * kP), acc[s][e]);
        acc[s][e + 1] = mul_add(odd, V::load(x + i + u * kP + V::kWidth), acc[s][e + 1]);
      }
    }
  }
  for (; i + kP <= k; i += kP) {
    for (int s = 0; s < S; ++s) {
      V even, odd;
      V::load_bf16_pair(w + s * stride * ldw + i, even, odd);
      acc[s][0] = mul_add(even, V::load(x + i), acc[s][0]);
      acc[s][1] = mul_add(odd, V::load(x + i + V::kWidth), acc[s][1]);
    }
  }
  for (int s = 0; s < S; ++s) {
    for (int h = kAcc / 2; h >= 1; h /= 2) {
      for (int u = 0; u < h; ++u) acc[s][u] = acc[s][u] + acc[s][u + h];
    }
    float sum = reduce_add(acc[s][0]);
    for (int64_t t = i; t < k; ++t) sum += x[t] * bf16::to_f32(w[s * stride * ldw + t]);
    sums[s] = sum;
  }
}

inline void store_past_caches(float* p, float v) {
  _mm_stream_si32(reinterpret_cast<int*>(p), std::bit_cast<int>(v));
}

template <class V, OneTokenPattern kPattern>
void gemv_bf16_one_token_as(const GemvArgs& a) {
  constexpr int kStreams = kPattern.streams;
  const auto* x = static_cast<const float*>(a.xp);
  const auto* w = static_cast<const uint16_t*>(a.w);
  const int64_t len = a.n / kStreams;
  float sums[kStreams];
  for (int64_t j = 0; j < len; ++j) {
    one_token_rows<V, kPattern, kStreams>(x, a.k, w + j * a.ldw, a.ldw, len, sums);
    for (int s = 0; s < kStreams; ++s) {
      const int64_t o = s * len + j;
      store_past_caches(a.y + o, a.bias != nullptr ? sums[s] + a.bias[o] : sums[s]);
    }
  }
  for (int64_t o = len * kStreams; o < a.n; ++o) {
    one_token_rows<V, kPattern, 1>(x, a.k, w + o * a.ldw, a.ldw, 1, sums);
    store_past_caches(a.y + o, a.bias != nullptr ? sums[0] + a.bias[o] : sums[0]);
  }
  // The stores above are weakly ordered: complete them before the caller (or the pool's
  // completion flag) lets another thread read y.
  _mm_sfence();
}

template <class V>
void gemv_bf16_one_token(const GemvArgs& a) {
  if (a.intel_pattern) {
    gemv_bf16_one_token_as<V, kOneTokenIntel>(a);
  } else {
    gemv_bf16_one_token_as<V, kOneTokenAmd>(a);
  }
}

// gemv_t (linear_gemv.h): T tokens × kTile columns of accumulators; rows in blocks of
// kGemvTRowBlock, each block's rows read once from DRAM by its first column tile (which
// prefetches the next block's lines of its tile) and from L1 by the others.
constexpr int64_t kGemvTRowBlock = 16;

template <class V, int T>
void gemv_t_tokens(const GemvTArgs& a, const float* xr, float* y) {
  constexpr int kW = V::kWidth;
  constexpr int kVecs = 4;
  constexpr int64_t kTile = kVecs * kW;
  const int64_t full = a.n / kTile * kTile;
  for (int64_t k0 = 0; k0 < a.k; k0 += kGemvTRowBlock) {
    const int64_t k1 = std::min(a.k, k0 + kGemvTRowBlock);
    for (int64_t c0 = 0; c0 < full; c0 += kTile) {
      V acc[T][kVecs];
      for (int t = 0; t < T; ++t) {
        for (int j = 0; j < kVecs; ++j) {
          acc[t][j] = k0 == 0 ? V::zero() : V::load(y + t * a.ldy + c0 + j * kW);
        }
      }
      for (int64_t i = k0; i < k1; ++i) {
        const uint16_t* row = a.w + i * a.ldw + c0;
        // The same tile one block ahead: 2 bytes · kTile are one or two cache lines.
        __builtin_prefetch(row + kGemvTRowBlock * a.ldw, 0, 3);
        if constexpr (kTile * 2 > 64) __builtin_prefetch(row + kGemvTRowBlock * a.ldw + 32, 0, 3);
        V wv[kVecs];
        for (int j = 0; j < kVecs; ++j) wv[j] = V::load_bf16(row + j * kW);
        for (int t = 0; t < T; ++t) {
          const V xv = V::set1(xr[t * a.k + i]);
          for (int j = 0; j < kVecs; ++j) acc[t][j] = mul_add(wv[j], xv, acc[t][j]);
        }
      }
      for (int t = 0; t < T; ++t) {
        for (int j = 0; j < kVecs; ++j) acc[t][j].store(y + t * a.ldy + c0 + j * kW);
      }
    }
    for (int64_t c = full; c < a.n; ++c) {
      for (int t = 0; t < T; ++t) {
        float sum = k0 == 0 ? 0.0f : y[t * a.ldy + c];
        for (int64_t i = k0; i < k1; ++i) sum += xr[t * a.k + i] * bf16::to_f32(a.w[i * a.ldw + c]);
        y[t * a.ldy + c] = sum;
      }
    }
  }
}

template <class V>
void gemv_t_rows(const GemvTArgs& a) {
  constexpr int kMaxT = gemv_max_tokens<V>();
  for (int64_t t0 = 0; t0 < a.tokens; t0 += kMaxT) {
    const float* xr = a.xr + t0 * a.k;
    float* y = a.y + t0 * a.ldy;
    switch (std::min<int64_t>(kMaxT, a.tokens - t0)) {
      case 4:
        if constexpr (kMaxT >= 4) gemv_t_tokens<V, 4>(a, xr, y);
        break;
      case 3:
        if constexpr (kMaxT >= 3) gemv_t_tokens<V, 3>(a, xr, y);
        break;
      case 2:
        gemv_t_tokens<V, 2>(a, xr, y);
        break;
      default:
        gemv_t_tokens<V, 1>(a, xr, y);
        break;
    }
  }
}

}  // namespace
}  // namespace ctxpar::kernels::detail
