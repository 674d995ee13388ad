// Internal: the attention job (attention_kernel.h) as a template over a simd vector type V
// (simd.h) and the KV element type (float, uint16_t holding bf16 bits, or uint8_t holding
// e4m3 bits). Included only by attention_kernel_{scalar,avx2,avx512}.cc (and a test that
// instantiates it over an emulated wide vector); everything here has internal linkage, so
// copies compiled with different ISA flags never mix at link time.
//
// Algorithm (flash-decoding style, one pass over the keys, f32 accumulation):
//   q rows are rounded to bf16 when the cache is bf16 (attention.h), scaled by scale·log2(e)
//   (scores live in base 2; the lse is converted back to natural log at the end; a variant
//   with bf16 dot products keeps q as bf16 and scales the scores instead, Dot below) and put
//   in pair lane order when the cache is bf16 or e4m3, so a
//   K row converts with one shift and one mask per vector (bf16) or two shifts, a mask and
//   vcvtph2ps (e4m3, whose loads yield value · 2^-8: q is scaled by 2^8 and o by 2^8 at the
//   end, both exact);
//   for each tile of kKeyTile keys:
//     S[rows, tile] = Q · Kᵀ   dot products in 2- (AVX2) or 4-row (AVX-512) × 4-key register
//                               blocks; key blocks run outermost and the KV heads of the job
//                               inside; or, for a head with many rows and few dims (prefill),
//                               outer products over the tile transposed (6 rows × 64 keys on
//                               AVX-512, 6 × 16 on AVX2);
//     online softmax per row: m' = ⌈max(m, max S)⌉, P = 2^(S − m'), l = l·2^(m − m') + ΣP,
//                              o *= 2^(m − m');
//     O[rows, dv] += P · V     outer products in register blocks of up to 6 rows × two pair
//                              steps (AVX-512; 6 rows × one step on AVX2), or bf16 dot
//                              products of P rounded to bf16 (Dot below);
//     meanwhile the next tile's K and V rows are prefetched (TilePrefetch, below).
//   Finally o /= l and lse = (m + log2 l)·ln 2; a row that saw no key gets o = 0, lse = -inf.
// All query heads of a KV head are rows of the same job, so every K/V row is loaded from
// memory once and reused from L1 by all of them. With more than 16 rows per head a bf16 tile
// is converted to f32 once instead of once per row block.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "ctxpar/core/fp8.h"
#include "ctxpar/core/half.h"
#include "ctxpar/kernels/attention_kernel.h"
#include "ctxpar/kernels/simd.h"

namespace ctxpar::kernels::detail {
namespace {

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2 = 0.693147180559945309f;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// Rows above which a bf16 (or e4m3) tile is converted to f32 once instead of once per row block.
// Converting once writes the tile to L2 (64 keys × 576 dims × 4 B = 144 KiB for MLA) and
// re-reads it per row block; at MLA decode's 16 rows the shift-and-mask per row block costs
// less: 16 heads 576/512 went from 72 to 95 GFLOP/s on AVX-512, 43 to 55 on AVX2
// (kernels_attention_bench MlaDecode, 1 thread, no AMX).
constexpr int kDirectBf16Rows = 16;
// Register block of the score micro-kernel: rows × kQkKeys keys. 16 ymm registers hold 2 × 4
// accumulators + 4 q + 2 k; 32 zmm hold 4 × 4 + 8 q + 2 k, and with 4 rows a GQA group of 4
// query heads converts each bf16 K vector once.
template <class V>
constexpr int qk_block_rows() {
  return V::kWidth >= 16 ? 4 : 2;
}
constexpr int kQkKeys = 4;

// Rows of a KV head from which the scores are outer products over the K tile transposed
// (q element broadcast × 16 keys of one K dimension) instead of 4 × 4 dot-product blocks:
// those end in a horizontal reduction per block that costs as much as the block's FMAs at
// d 64, while the transpose is paid once per tile and shared by all rows of the head.
// Decode (4 rows per KV head for GQA) stays with the dot products, which read K once.
constexpr int kTransposedQkRows = 8;
constexpr int kTransposedRowsPerDim = 20;
// The same for dot-product scores (Bf16Dot): the pairs' transpose and its reads reported to
// the prefetcher at once paid off from 32 rows per KV head, not at decode's 16 (Zen 4,
// attention_decode_bench Gqa64K, 16 rows: 5.3 ms per step transposed against 4.6; 32 rows
// 4.65 against 4.7-4.9; kernels_attention_bench GqaPrefill, 64 rows: above).
constexpr int kTransposedDotRows = 32;
// Register block of the outer-product scores: rows × key vectors. 32 zmm hold 6 × 4
// accumulators + 4 key vectors + 1 broadcast; 16 ymm hold 6 × 2 + 2 + 1. Each accumulator
// takes one FMA per dimension, so a block needs more of them than the FMA latency × issue
// width (4 cycles × 2 on AVX2 CPUs) to keep the FMAs busy: AVX2's former 2 × 4 block had
// exactly 8 and ran GQA prefill at 0.4 of the f32 GEMM (kernels_attention_bench GqaPrefill).
constexpr int kQktRows = 6;
template <class V>
constexpr int qkt_key_vectors() {
  return V::kWidth >= 16 ? 4 : 2;
}

// Keys of V the P·V micro-kernel reads between reports to the tile prefetcher (its
// accumulators are loaded and stored once per run): 8 where the requests go to L1 (Intel),
// 32 where they go to L2 (AMD). On the Zen 4 VM, 1 thread, kernels_attention_bench GqaDecode
// d 128 (three alternated runs, KV GB/s) from L2 read 19.1-19.2 in runs of 8 keys, 21.0-21.2
// in runs of 32, 20.7-21.2 in one run of the whole tile; from DRAM 16.2-16.4, 16.6-17.5 and
// 14.2-14.5 (the whole tile's requests at once arrive late); MlaDecode 3.7, 3.9-4.0, 4.0.
constexpr int kPvPrefetchKeysL1 = 8;
constexpr int kPvPrefetchKeysL2 = 32;

inline float max_f(float a, float b) {
  return a > b ? a : b;
}

// Where value i of a row of d values sits in pair lane order (simd.h) for vectors of `width`.
inline int64_t pair_lane_index(int64_t i, int64_t d, int width) {
  const int64_t step = 2 * static_cast<int64_t>(width);
  const int64_t base = i / step * step;
  if (base + step > d) return i;  // past the last full pair step: natural position
  const int64_t k = i - base;
  return base + (k % 2) * width + k / 2;
}

inline float load_one(const float* p) {
  return *p;
}
inline float load_one(const uint16_t* p) {
  return bf16::to_f32(*p);
}
inline float load_one(const uint8_t* p) {  // · kFp8LoadFactor, as load_fp8_pair
  return fp8_e4m3::to_f32(*p) * simd::kFp8LoadFactor;
}

// One pair step (2·kWidth values) as two vectors: natural order for f32, even/odd for bf16
// and e4m3.
template <class V>
inline void load_pair(const float* p, V& a, V& b) {
  a = V::load(p);
  b = V::load(p + V::kWidth);
}
template <class V>
inline void load_pair(const uint16_t* p, V& a, V& b) {
  V::load_bf16_pair(p, a, b);
}
template <class V>
inline void load_pair(const uint8_t* p, V& a, V& b) {
  V::load_fp8_pair(p, a, b);
}

// Requests the cache lines of the next tile's K and V rows while this tile is computed, as
// many bytes as the micro-kernels report reading (consumed()), so the requests are spread over
// all of the tile's work, scores and P·V alike, one tile (for GQA decode 256 KiB) ahead of use.
// Why (GQA decode from DRAM went from 0.41 to ~0.7 of the read ceiling; kernels_attention_bench):
// - a core has ~16 L1 fill buffers, and a prefetch waits for one: rows requested in bursts
//   (8 keys ahead, in the score phase only) stalled the arithmetic behind them and left DRAM
//   idle during P·V, so memory and compute took turns; spreading them lets them overlap;
// - the next tile's rows are merged into contiguous spans (a paged block of 16 tokens × all of
//   the job's heads is one 32 KiB span for GQA), cut into lanes of a sixth of the tile (4 to
//   32 KiB), and the lanes are walked round-robin, kChunk bytes at a time: five to eight streams
//   within pages the L2 streamer can run ahead on. GQA's eight (four blocks, K and V) against
//   one walk in key order: 0.60 -> 0.68; MLA's 74 KiB tile in 32 KiB lanes (three) against six
//   of 12 KiB: 0.48-0.51 -> 0.63-0.65; more streams lose again (GQA in sixteen 0.66-0.68
//   against 0.69-0.71, MLA in eighteen 0.46);
// - the bookkeeping per request batch is a pointer bump: a walk over (key, head, K/V) rows
//   cost 16% of the L2-resident compute rate (18.4 -> 15.5 GB/s without issuing a prefetch);
// - requests a fixed distance ahead of the reads in their own order (this tile's K, its V,
//   then the next tile's, one stream, with P·V taken key run by key run so V is read in
//   order too) read GQA decode at 0.39-0.42 at every distance from 8 to 256 KiB (throwaway
//   test), though the layout read that way with no arithmetic gives 0.82-0.91
//   (GqaPagedRead ahead:512, eight spans at once); untried: several such streams at once.
// - on AMD cores (Zen 4 VM) the requests go to L2 (prefetcht1; AttnJob::prefetch_to_l2): GQA
//   decode d 128 from DRAM 0.30-0.34 -> 0.39-0.43 of the read ceiling on 1 thread, 18.3 -> 24.7
//   GB/s on 2; MLA 16 heads 0.076 -> 0.088, 8 heads 0.13 -> 0.17. prefetcht2 reads as t1, t0
//   (the Intel path) and prefetchnta 0.36; no requests at all 0.16-0.20 (the hardware
//   prefetchers do not follow the paged rows).
template <class T>
class TilePrefetch {
 public:
  // k[x] / v[x]: head 0's rows of the next tile's keys x < n; head h's row is h·head_stride
  // bytes further; v_bytes 0: V lies inside the K rows (MLA).
  TilePrefetch(const T* const* k, const T* const* v, int n, int heads, int64_t k_head_stride,
               int64_t v_head_stride, int64_t k_bytes, int64_t v_bytes, bool to_l2)
      : to_l2_(to_l2) {
    const int64_t total = int64_t{n} * heads * (k_bytes + v_bytes);
    lane_ = std::clamp<int64_t>((total / kSpans + kPage - 1) / kPage * kPage, kPage, kMaxLaneBytes);
    add_rows(k, n, heads, k_head_stride, k_bytes);
    if (v_bytes > 0) add_rows(v, n, heads, v_head_stride, v_bytes);
  }

  bool to_l2() const { return to_l2_; }

  // The caller has just read `bytes` bytes of this tile's rows: request as many of the next.
  void consumed(int64_t bytes) {
    credit_ += bytes;
    while (credit_ >= kChunk && live_ > 0) {
      const char* p = cur_[at_];
      if (to_l2_) {
        for (int64_t off = 0; off < kChunk; off += kLine) __builtin_prefetch(p + off, 0, 2);
      } else {
        for (int64_t off = 0; off < kChunk; off += kLine) __builtin_prefetch(p + off, 0, 3);
      }
      credit_ -= kChunk;
      cur_[at_] = p + kChunk;
      if (cur_[at_] >= end_[at_]) {  // span done: the last live one takes its place
        --live_;
        cur_[at_] = cur_[live_];
        end_[at_] = end_[live_];
      } else {
        ++at_;
      }
      if (at_ >= live_) at_ = 0;
    }
  }

 private:
  static constexpr int64_t kLine = 64;
  static constexpr int64_t kChunk = 256;
  static constexpr int64_t kPage = 4096;
  static constexpr int64_t kSpans = 6;  // spans a tile's rows are cut into, lanes permitting
  static constexpr int64_t kMaxLaneBytes = 32 * 1024;
  static constexpr int kMaxSpans = 2 * kKeyTile;  // one per key of K and of V

  // Spans of one tensor's rows; a row's heads form one extent when they are adjacent.
  void add_rows(const T* const* rows, int n, int heads, int64_t head_stride, int64_t bytes) {
    const bool adjacent = heads == 1 || head_stride == bytes;
    for (int x = 0; x < n; ++x) {
      for (int h = 0; h < (adjacent ? 1 : heads); ++h) {
        const char* b = reinterpret_cast<const char*>(rows[x]) + h * head_stride;
        add_extent(b, b + (adjacent ? heads * bytes : bytes));
      }
    }
  }
  void add_extent(const char* b, const char* e) {
    // Extend the last span when this extent continues it and the lane has room.
    if (live_ > 0 && end_[live_ - 1] == b && e - cur_[live_ - 1] <= lane_) {
      end_[live_ - 1] = e;
      return;
    }
    if (live_ == kMaxSpans) return;  // only prefetching is lost: the rows are still read
    cur_[live_] = b;
    end_[live_] = e;
    ++live_;
  }

  const char* cur_[kMaxSpans];
  const char* end_[kMaxSpans];
  int live_ = 0, at_ = 0;
  int64_t credit_ = 0;
  int64_t lane_ = kMaxLaneBytes;
  bool to_l2_;
};

// consumed() on a prefetcher that may be absent (rows already converted to f32).
template <class T>
inline void consumed(TilePrefetch<T>* pf, int64_t bytes) {
  if (pf != nullptr) pf->consumed(bytes);
}

// Resolves key indices to row addresses (KeyRows in attention_kernel.h).
class RowResolver {
 public:
  explicit RowResolver(const KeyRows& k) : k_(k) {
    const int64_t b = k.block_size;
    if (b > 0 && (b & (b - 1)) == 0) {
      shift_ = 0;
      while ((int64_t{1} << shift_) < b) ++shift_;
    }
  }

  template <class T>
  void resolve(int64_t j0, int n, const T** krow, const T** vrow) const {
    for (int i = 0; i < n; ++i) {
      const int64_t li = k_.indices != nullptr ? k_.indices[j0 + i] : j0 + i;
      const char* kp;
      const char* vp;
      if (k_.block_table != nullptr) {
        const int64_t blk = shift_ >= 0 ? li >> shift_ : li / k_.block_size;
        const int64_t off = li - blk * k_.block_size;
        const int64_t id = k_.block_table[blk];
        kp = k_.k + id * k_.k_block_stride + off * k_.k_row_stride;
        vp = k_.v + id * k_.v_block_stride + off * k_.v_row_stride;
      } else {
        kp = k_.k + li * k_.k_row_stride;
        vp = k_.v + li * k_.v_row_stride;
      }
      krow[i] = reinterpret_cast<const T*>(kp);
      vrow[i] = reinterpret_cast<const T*>(vp);
    }
  }

 private:
  KeyRows k_;
  int shift_ = -1;
};

// s[rb·ss + kb] = q[rb]·k[kb] for RB query rows (lane order, row stride qs) and KB keys.
template <class V, int RB, int KB, class RowT, class Pf>
inline void qk_block(const float* q, int64_t qs, const RowT* const* k, int64_t d, float* s,
                     int64_t ss, Pf* pf) {
  constexpr int kW = V::kWidth;
  constexpr int kP = 2 * kW;
  V acc[RB][KB];
  for (int rb = 0; rb < RB; ++rb) {
    for (int kb = 0; kb < KB; ++kb) acc[rb][kb] = V::zero();
  }
  const int64_t steps = d / kP;
  // Reported once for the block: a call inside the loop below (it writes the prefetcher's
  // state) keeps the compiler from holding acc in registers across steps.
  consumed(pf, KB * d * static_cast<int64_t>(sizeof(RowT)));
  for (int64_t p = 0; p < steps; ++p) {
    V qa[RB], qb[RB];
    for (int rb = 0; rb < RB; ++rb) {
      qa[rb] = V::load(q + rb * qs + p * kP);
      qb[rb] = V::load(q + rb * qs + p * kP + kW);
    }
    for (int kb = 0; kb < KB; ++kb) {
      V ka, kb2;
      load_pair(k[kb] + p * kP, ka, kb2);
      for (int rb = 0; rb < RB; ++rb) {
        acc[rb][kb] = mul_add(qa[rb], ka, acc[rb][kb]);
        acc[rb][kb] = mul_add(qb[rb], kb2, acc[rb][kb]);
      }
    }
  }
  // Reduced with compile-time indices only: a run-time index into acc (a tail loop below, say)
  // makes the compiler keep acc in memory and store all RB·KB accumulators every step.
  float sums[RB][KB];
  if constexpr (RB == 4 && KB == 4 && requires(V x, float* o) {
                  reduce_add16(x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, o, ss);
                }) {
    // One tree for the 16 sums, stored as four rows of four: GQA decode's block (4 query
    // heads of a KV head × 4 keys). d 64, 1 thread: 13.3 → 10 µs of scores per 2048
    // key-heads; the same tree with one 64-byte store of the sums, read back as floats,
    // gained nothing (the float loads wait for the wide store, we think).
    if (steps * kP == d) {
      [&]<int... I>(std::integer_sequence<int, I...>) {
        reduce_add16(acc[I / 4][I % 4]..., s, ss);
      }
      (std::make_integer_sequence<int, 16>{});
      return;
    }
    [&]<int... I>(std::integer_sequence<int, I...>) {
      reduce_add16(acc[I / 4][I % 4]..., &sums[0][0], KB);
    }
    (std::make_integer_sequence<int, 16>{});
  } else if constexpr (KB == 1 && RB == 4) {
    float four[4];  // one key, four rows: the four sums in one reduction
    reduce_add4(acc[0][0], acc[1][0], acc[2][0], acc[3][0], four);
    for (int rb = 0; rb < 4; ++rb) sums[rb][0] = four[rb];
  } else if constexpr (KB == 4) {
    [&]<int... R>(std::integer_sequence<int, R...>) {
      (reduce_add4(acc[R][0], acc[R][1], acc[R][2], acc[R][3], sums[R]), ...);
    }
    (std::make_integer_sequence<int, RB>{});
  } else {
    [&]<int... I>(std::integer_sequence<int, I...>) {
      ((sums[I / KB][I % KB] = reduce_add(acc[I / KB][I % KB])), ...);
    }
    (std::make_integer_sequence<int, RB * KB>{});
  }
  for (int rb = 0; rb < RB; ++rb) {
    for (int kb = 0; kb < KB; ++kb) {
      float sum = sums[rb][kb];
      for (int64_t i = steps * kP; i < d; ++i) sum += q[rb * qs + i] * load_one(k[kb] + i);
      s[rb * ss + kb] = sum;
    }
  }
}

// Pair steps of o the P·V micro-kernel accumulates per pass over the keys: with 32 zmm,
// two steps give each row 4 accumulators (16 for 4 rows: twice what hides the FMA latency)
// and share each weight broadcast between two steps; 16 ymm hold only 4 rows × 1 step.
template <class V>
constexpr int pv_block_steps() {
  return V::kWidth >= 16 ? 2 : 1;
}
// Rows of the P·V register block: 6 × 2 steps = 24 zmm accumulators (+ 4 values, 1 weight),
// 6 × 1 step = 12 ymm (+ 2 values, 1 weight), so a job with many rows per head (MLA's 16)
// reads each value tile from L2 in 3 passes, not 4, and AVX2 has 12 accumulator chains where
// 4 × 1 step had only the 8 that the FMA latency needs at the least.
template <class V>
constexpr int pv_block_rows() {
  return V::kWidth >= 8 ? 6 : 4;
}

// o[rb] += Σ_j w[rb·ws + j]·v[j] for RB rows over keys [j0, j1), pair steps [p0, p0 + PS)
// of o and v (the same lane order). The accumulators live in registers only if no store
// through another pointer (the prefetcher's) happens in this loop: callers report reads
// between calls. Always inlined: GCC kept an out-of-line copy in the dot-product variant
// (attention_kernel_avx512bf16.cc), which read GQA decode 5-10% slower than inlined.
template <class V, int RB, int PS, class RowT>
[[gnu::always_inline]] inline void pv_keys(const float* w, int64_t ws, const RowT* const* v, int j0,
                                           int j1, int64_t p0, float* o, int64_t os) {
  constexpr int kW = V::kWidth;
  constexpr int kP = 2 * kW;
  V acc[RB][2 * PS];
  for (int rb = 0; rb < RB; ++rb) {
    for (int x = 0; x < 2 * PS; ++x) acc[rb][x] = V::load(o + rb * os + p0 * kP + x * kW);
  }
  for (int j = j0; j < j1; ++j) {
    V vv[2 * PS];
    for (int ps = 0; ps < PS; ++ps) load_pair(v[j] + (p0 + ps) * kP, vv[2 * ps], vv[2 * ps + 1]);
    for (int rb = 0; rb < RB; ++rb) {
      const V wj = V::set1(w[rb * ws + j]);
      for (int x = 0; x < 2 * PS; ++x) acc[rb][x] = mul_add(wj, vv[x], acc[rb][x]);
    }
  }
  for (int rb = 0; rb < RB; ++rb) {
    for (int x = 0; x < 2 * PS; ++x) acc[rb][x].store(o + rb * os + p0 * kP + x * kW);
  }
}

// pv_keys over keys [0, n) in runs of kPvPrefetchKeysL1 or L2, reporting each run's reads to
// pf.
template <class V, int RB, int PS, class RowT, class Pf>
inline void pv_pass(const float* w, int64_t ws, const RowT* const* v, int n, int64_t p0, float* o,
                    int64_t os, Pf* pf) {
  constexpr int kP = 2 * V::kWidth;
  if (pf == nullptr) {  // nothing to report: one run, accumulators loaded and stored once
    pv_keys<V, RB, PS>(w, ws, v, 0, n, p0, o, os);
    return;
  }
  const int run = pf->to_l2() ? kPvPrefetchKeysL2 : kPvPrefetchKeysL1;
  for (int j0 = 0; j0 < n; j0 += run) {
    const int j1 = std::min(n, j0 + run);
    consumed(pf, (j1 - j0) * PS * kP * static_cast<int64_t>(sizeof(RowT)));
    pv_keys<V, RB, PS>(w, ws, v, j0, j1, p0, o, os);
  }
}

// o[rb] += Σ_j w[rb·ws + j]·v[j] for RB rows (o and v in the same lane order) over n keys.
template <class V, int RB, class RowT, class Pf>
inline void pv_block(const float* w, int64_t ws, const RowT* const* v, int n, int64_t d, float* o,
                     int64_t os, Pf* pf) {
  constexpr int kP = 2 * V::kWidth;
  constexpr int kPs = pv_block_steps<V>();
  const int64_t steps = d / kP;
  int64_t p = 0;
  for (; p + kPs <= steps; p += kPs) pv_pass<V, RB, kPs>(w, ws, v, n, p, o, os, pf);
  for (; p < steps; ++p) pv_pass<V, RB, 1>(w, ws, v, n, p, o, os, pf);
  for (int64_t i = steps * kP; i < d; ++i) {
    for (int rb = 0; rb < RB; ++rb) {
      float acc = o[rb * os + i];
      for (int j = 0; j < n; ++j) acc += w[rb * ws + j] * load_one(v[j] + i);
      o[rb * os + i] = acc;
    }
  }
}

// A bf16 or e4m3 row as f32 in pair lane order (what load_pair and load_one produce).
template <class V, class RowT, class Pf>
inline void convert_row(const RowT* src, int64_t d, float* dst, Pf* pf) {
  consumed(pf, d * static_cast<int64_t>(sizeof(RowT)));
  constexpr int kW = V::kWidth;
  constexpr int kP = 2 * kW;
  const int64_t steps = d / kP;
  for (int64_t p = 0; p < steps; ++p) {
    V a, b;
    load_pair(src + p * kP, a, b);
    a.store(dst + p * kP);
    b.store(dst + p * kP + kW);
  }
  for (int64_t i = steps * kP; i < d; ++i) dst[i] = load_one(src + i);
}

template <class V>
inline void rescale_row(float* o, int64_t d, float s) {
  constexpr int kW = V::kWidth;
  const V sv = V::set1(s);
  int64_t i = 0;
  for (; i + kW <= d; i += kW) (V::load(o + i) * sv).store(o + i);
  for (; i < d; ++i) o[i] *= s;
}

// qk_block for a run-time row count 1..qk_block_rows<V>().
template <class V, int KB, class RowT, class Pf>
inline void qk_rows(int rb, const float* q, int64_t qs, const RowT* const* k, int64_t d, float* s,
                    Pf* pf) {
  static_assert(qk_block_rows<V>() <= 4);
  switch (rb) {
    case 4:
      qk_block<V, 4, KB>(q, qs, k, d, s, kKeyTile, pf);
      break;
    case 3:
      qk_block<V, 3, KB>(q, qs, k, d, s, kKeyTile, pf);
      break;
    case 2:
      qk_block<V, 2, KB>(q, qs, k, d, s, kKeyTile, pf);
      break;
    default:
      qk_block<V, 1, KB>(q, qs, k, d, s, kKeyTile, pf);
      break;
  }
}

// Row pointers of one KV head: head 0's rows shifted by the head's byte offset.
template <class T>
inline void shift_rows(const T* const* base, int n, int64_t byte_offset, const T** out) {
  for (int j = 0; j < n; ++j) {
    out[j] = reinterpret_cast<const T*>(reinterpret_cast<const char*>(base[j]) + byte_offset);
  }
}

// The score blocks of a tile of n keys, in the order that reads each K row from memory once:
// key blocks of kQkKeys outermost, then the KV heads (head h's K rows are k[j] + h·head_stride
// bytes), then the head's rows (head_rows each, grouped by head) in blocks of kRows.
// block(std::integral_constant<int, KB>, rb, r, kh, j, first) computes rows [r, r + rb) against
// the KB keys kh (kQkKeys, or 1 at a time in a short last block), whose scores go to columns
// j... Only a head's first row block gets pf (the others re-read the same rows from L1).
template <int kRows, class RowT, class Pf, class Block>
inline void for_score_blocks(int heads, int head_rows, const RowT* const* k, int64_t head_stride,
                             int n, Pf* pf, Block&& block) {
  for (int j = 0; j < n; j += kQkKeys) {
    const int kb = std::min(kQkKeys, n - j);
    for (int h = 0; h < heads; ++h) {
      const RowT* kh[kQkKeys];
      shift_rows(k + j, kb, h * head_stride, kh);
      for (int r = h * head_rows; r < (h + 1) * head_rows; r += kRows) {
        const int rb = std::min(kRows, (h + 1) * head_rows - r);
        Pf* first = r == h * head_rows ? pf : nullptr;
        if (kb == kQkKeys) {
          block(std::integral_constant<int, kQkKeys>{}, rb, r, kh, j, first);
        } else {
          for (int x = 0; x < kb; ++x) {
            block(std::integral_constant<int, 1>{}, rb, r, kh + x, j + x, first);
          }
        }
      }
    }
  }
}

// Scores of every row against keys [0, n) of a tile: s[r·kKeyTile + j] = q[r]·k_head(r)[j].
template <class V, class RowT, class Pf>
inline void tile_scores(const float* q, int64_t qs, int heads, int head_rows, const RowT* const* k,
                        int64_t head_stride, int n, int64_t dk, float* s, Pf* pf) {
  for_score_blocks<qk_block_rows<V>()>(heads, head_rows, k, head_stride, n, pf,
                                       [&]<int KB>(std::integral_constant<int, KB>, int rb, int r,
                                                   const RowT* const* kh, int j, Pf* first) {
                                         qk_rows<V, KB>(rb, q + r * qs, qs, kh, dk,
                                                        s + static_cast<int64_t>(r) * kKeyTile + j,
                                                        first);
                                       });
}

// kt[i·kKeyTile + j] = k[j][i] for j < n, i < d (f32 rows, any lane order: kt keeps it);
// the columns from n to kKeyTile are zero.
template <class V>
inline void transpose_tile(const float* const* k, int n, int64_t d, float* kt) {
  constexpr int kW = V::kWidth;
  for (int j0 = 0; j0 < kKeyTile; j0 += kW) {
    const int jn = std::clamp(n - j0, 0, kW);
    int64_t i0 = 0;
    for (; i0 + kW <= d; i0 += kW) {
      V r[kW];
      for (int x = 0; x < kW; ++x) r[x] = x < jn ? V::load(k[j0 + x] + i0) : V::zero();
      transpose(r);
      for (int y = 0; y < kW; ++y) r[y].store(kt + (i0 + y) * kKeyTile + j0);
    }
    for (; i0 < d; ++i0) {
      for (int x = 0; x < kW; ++x) kt[i0 * kKeyTile + j0 + x] = x < jn ? k[j0 + x][i0] : 0.0f;
    }
  }
}

// s[r·kKeyTile + j0 + j] = q[r]·k[j0 + j] for R rows (row stride qs, the lane order of kt)
// and NV·kWidth keys, from the transposed tile kt: per dimension, NV key vectors times a
// broadcast q value per row, no reduction.
template <class V, int R, int NV>
inline void qkt_block(const float* q, int64_t qs, const float* kt, int64_t d, int j0, float* s) {
  constexpr int kW = V::kWidth;
  V acc[R][NV];
  for (int r = 0; r < R; ++r) {
    for (int x = 0; x < NV; ++x) acc[r][x] = V::zero();
  }
  for (int64_t i = 0; i < d; ++i) {
    V kv[NV];
    for (int x = 0; x < NV; ++x) kv[x] = V::load(kt + i * kKeyTile + j0 + x * kW);
    for (int r = 0; r < R; ++r) {
      const V qb = V::set1(q[r * qs + i]);
      for (int x = 0; x < NV; ++x) acc[r][x] = mul_add(qb, kv[x], acc[r][x]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int x = 0; x < NV; ++x) acc[r][x].store(s + r * kKeyTile + j0 + x * kW);
  }
}

// Scores of `rows` rows of one KV head against the n keys of the transposed tile kt (columns
// up to the next whole key block are written too, from kt's zero columns).
template <class V>
inline void tile_scores_transposed(const float* q, int64_t qs, int rows, const float* kt, int n,
                                   int64_t d, float* s) {
  constexpr int kR = kQktRows;
  constexpr int kNv = qkt_key_vectors<V>();
  constexpr int kKeys = kNv * V::kWidth;
  static_assert(kKeyTile % kKeys == 0 && kR <= 6);
  for (int j0 = 0; j0 < n; j0 += kKeys) {
    for (int r = 0; r < rows; r += kR) {
      const float* qr = q + r * qs;
      float* sr = s + static_cast<int64_t>(r) * kKeyTile;
      switch (std::min(kR, rows - r)) {
        case 6:
          qkt_block<V, 6, kNv>(qr, qs, kt, d, j0, sr);
          break;
        case 5:
          qkt_block<V, 5, kNv>(qr, qs, kt, d, j0, sr);
          break;
        case 4:
          qkt_block<V, 4, kNv>(qr, qs, kt, d, j0, sr);
          break;
        case 3:
          qkt_block<V, 3, kNv>(qr, qs, kt, d, j0, sr);
          break;
        case 2:
          qkt_block<V, 2, kNv>(qr, qs, kt, d, j0, sr);
          break;
        default:
          qkt_block<V, 1, kNv>(qr, qs, kt, d, j0, sr);
          break;
      }
    }
  }
}

// o[r] += Σ_j p[r·kKeyTile + j]·v[j] for rows of one KV head; only the first row block
// reports its reads to pf.
template <class V, class RowT, class Pf>
inline void tile_values(const float* p, int rows, const RowT* const* v, int n, int64_t dv, float* o,
                        int64_t os, Pf* pf) {
  constexpr int kRows = pv_block_rows<V>();
  // As few blocks as kRows allows, as even as they go (8 rows: 4 + 4, not 6 + 2, whose
  // 2-row block is bound by the FMA latency of its few accumulators).
  const int blocks = (rows + kRows - 1) / kRows;
  const int per = (rows + blocks - 1) / blocks;
  for (int r = 0; r < rows; r += per) {
    const float* pr = p + static_cast<int64_t>(r) * kKeyTile;
    float* orow = o + r * os;
    Pf* first = r == 0 ? pf : nullptr;
    switch (std::min(per, rows - r)) {
      case 6:
        if constexpr (kRows >= 6) pv_block<V, 6>(pr, kKeyTile, v, n, dv, orow, os, first);
        break;
      case 5:
        if constexpr (kRows >= 5) pv_block<V, 5>(pr, kKeyTile, v, n, dv, orow, os, first);
        break;
      case 4:
        pv_block<V, 4>(pr, kKeyTile, v, n, dv, orow, os, first);
        break;
      case 3:
        pv_block<V, 3>(pr, kKeyTile, v, n, dv, orow, os, first);
        break;
      case 2:
        pv_block<V, 2>(pr, kKeyTile, v, n, dv, orow, os, first);
        break;
      default:
        pv_block<V, 1>(pr, kKeyTile, v, n, dv, orow, os, first);
        break;
    }
  }
}

// Online softmax update of one row for a tile of n scores s[0, n) of which the first `valid`
// count (later ones are masked). Turns s into the weights p and rescales the row's o.
template <class V>
inline void softmax_row(float* s, int n, int valid, float score_scale, float& m, float& l, float* o,
                        int64_t dv) {
  constexpr int kW = V::kWidth;
  const int padded = (n + kW - 1) / kW * kW;  // s has kKeyTile >= padded slots
  for (int j = valid; j < padded; ++j) s[j] = kNegInf;
  const V sc = V::set1(score_scale);
  V mx = V::set1(kNegInf);
  for (int j = 0; j < padded; j += kW) {
    const V x = V::load(s + j) * sc;
    x.store(s + j);
    mx = max(mx, x);
  }
  // The running max is kept a whole number (scores are in base 2): every weight is then 2^s
  // scaled by a power of two, so its bf16 rounding (Bf16Dot) is the same wherever the keys
  // were cut into tiles, split-K chunks or DCP shards, and the rescaling of o is exact.
  const float m_new = std::ceil(max_f(m, reduce_max(mx)));
  if (m_new == kNegInf) {  // no key of this row so far: weights 0, state unchanged
    for (int j = 0; j < padded; ++j) s[j] = 0.0f;
    return;
  }
  const V mv = V::set1(m_new);
  V sum = V::zero();
  for (int j = 0; j < padded; j += kW) {
    const V p = exp2(V::load(s + j) - mv);
    p.store(s + j);
    sum = sum + p;
  }
  const float alpha = std::exp2(m - m_new);  // 0 when m was -inf
  l = l * alpha + reduce_add(sum);
  if (alpha != 1.0f) rescale_row<V>(o, dv, alpha);
  m = m_new;
}

// The dot products of a bf16 cache, for ISAs that have them (attention_kernel_avx512bf16.cc
// supplies them: tile_scores over q as bf16 in natural order, unscaled, for head dims that
// are multiples of kDimStep, and tile_scores_transposed, the same for heads of many rows
// through the K tile transposed into k_t; tile_values over the weights rounded to bf16, o in
// value_lane_index order, for dv a multiple of kValueStep); NoBf16Dot: none, f32 FMAs.
struct NoBf16Dot {
  static constexpr bool kEnabled = false;
  static constexpr int kDimStep = 1;
  static constexpr bool kDotValues = false;
  static constexpr int kValueStep = 1;
  static int64_t value_lane_index(int64_t i) { return i; }
};

template <class V, class KvT, class Dot>
void run_job(const AttnJob& job, float* scratch) {
  constexpr int kW = V::kWidth;
  constexpr int kP = 2 * kW;
  // bf16 and e4m3 rows load in pair lane order; e4m3 loads yield value · kFp8LoadFactor.
  constexpr bool kPairOrder = !std::is_same_v<KvT, float>;
  constexpr float kLoadFactor = std::is_same_v<KvT, uint8_t> ? simd::kFp8LoadFactor : 1.0f;
  const AttnScratchLayout lay = attn_scratch_layout(job.dk, job.dv);
  const int rows = job.rows;
  const int heads = job.kv_heads;
  const int head_rows = rows / heads;
  const int64_t dk = job.dk, dv = job.dv;
  const int64_t qs = lay.dk_stride, os = lay.dv_stride;
  float* q = scratch + lay.q;
  float* o = scratch + lay.o;
  float* s = scratch + lay.s;
  float* m = scratch + lay.m;
  float* l = scratch + lay.l;
  float* k_tile = scratch + lay.k_tile;
  float* v_tile = scratch + lay.v_tile;
  float* k_t = scratch + lay.k_t;

  // A bf16 cache's scores are those of q rounded to bf16, as the cache rounded k.
  constexpr bool kBf16 = std::is_same_v<KvT, uint16_t>;
  // transposed: vector ISAs only (one lane would make the transposed form a scalar loop), and
  // only where the transpose (~4 / head_rows of the score FMAs on AVX-512) costs less than the
  // dot products' reductions (~80 / dk): GQA prefill, not MLA decode's 16 rows over 576 dims.
  // convert: a bf16 or e4m3 tile used by several row blocks is converted once; when V rows are
  // prefixes of the K rows (MLA) and the prefix ends on a pair step, the converted K tile
  // serves as V.
  const bool transposed =
      kW >= 8 && head_rows >= kTransposedQkRows && head_rows * kTransposedRowsPerDim > dk;
  const bool convert = kPairOrder && head_rows > kDirectBf16Rows;
  // Where there are dot products they take every shape's scores: against the transposed f32
  // tile (Zen 4, 1 thread, kernels_attention_bench GqaPrefill bf16 d 128 75 -> 92-95 GFLOP/s,
  // d 64 70-75 -> 81-84; attention_decode_bench Gqa64K, 16 rows per KV head, 8.3 -> 5.9-6.0
  // ms); where `transposed`, against the bf16 tile transposed in pairs (no reductions:
  // GqaPrefill d 64 100-101 -> 123-125 GFLOP/s, d 128 117-127 -> 139, alternated runs).
  const bool dot_scores = Dot::kEnabled && kBf16 && dk % Dot::kDimStep == 0;
  // ... and P·V, with the weights rounded to bf16, V read as stored by every row block
  // (kernels_attention_bench GqaPrefill bf16 d 128, 1 thread: 112-120 GFLOP/s against 88-90
  // over the converted tile; d 64 68-98 against 61-76).
  const bool dot_values = dot_scores && Dot::kDotValues && dv % Dot::kValueStep == 0;
  const float q_scale = job.scale * kLog2e / kLoadFactor;
  const float score_scale = dot_scores ? q_scale : 1.0f;
  uint16_t* const q_bf16 = reinterpret_cast<uint16_t*>(q);  // dot_scores: row stride 2·qs
  for (int r = 0; r < rows; ++r) {
    const float* src = job.q[r];
    float* dst = q + r * qs;
    if (dot_scores) {
      for (int64_t i = 0; i < dk; ++i) q_bf16[2 * r * qs + i] = bf16::from_f32(src[i]);
    } else {
      for (int64_t i = 0; i < dk; ++i) {
        const float x = kBf16 ? bf16::to_f32(bf16::from_f32(src[i])) : src[i];
        dst[kPairOrder ? pair_lane_index(i, dk, kW) : i] = x * q_scale;
      }
    }
    std::memset(o + r * os, 0, static_cast<size_t>(dv) * sizeof(float));
    m[r] = kNegInf;
    l[r] = 0.0f;
  }

  const bool v_from_k_tile = job.v_in_k_row && (dv % kP == 0 || dv == dk);
  const int64_t k_bytes = dk * static_cast<int64_t>(sizeof(KvT));
  const int64_t v_bytes = job.v_in_k_row ? 0 : dv * static_cast<int64_t>(sizeof(KvT));

  const RowResolver resolver(job.keys);
  const KvT* k_base[2][kKeyTile];  // rows of KV head 0, this tile and the next
  const KvT* v_base[2][kKeyTile];
  const KvT* kr[2 * kKeyTile];  // rows of head 0: this tile, then the next (prefetched)
  const KvT* vr[2 * kKeyTile];
  const float* k_f32[kKeyTile];
  const float* v_f32[kKeyTile];
  int cur = 0;
  if (job.key_begin < job.key_end) {
    const int n0 = static_cast<int>(std::min<int64_t>(kKeyTile, job.key_end - job.key_begin));
    resolver.resolve(job.key_begin, n0, k_base[0], v_base[0]);
  }
  for (int64_t t0 = job.key_begin; t0 < job.key_end; t0 += kKeyTile) {
    const int n = static_cast<int>(std::min<int64_t>(kKeyTile, job.key_end - t0));
    const int n_next = static_cast<int>(std::clamp<int64_t>(job.key_end - t0 - n, 0, kKeyTile));
    if (n_next > 0) resolver.resolve(t0 + n, n_next, k_base[cur ^ 1], v_base[cur ^ 1]);
    shift_rows(k_base[cur], n, 0, kr);
    shift_rows(v_base[cur], n, 0, vr);
    shift_rows(k_base[cur ^ 1], n_next, 0, kr + n);
    shift_rows(v_base[cur ^ 1], n_next, 0, vr + n);
    TilePrefetch<KvT> prefetch(kr + n, vr + n, n_next, heads, job.k_head_stride, job.v_head_stride,
                               k_bytes, v_bytes, job.prefetch_to_l2);
    TilePrefetch<KvT>* const pf = &prefetch;
    TilePrefetch<KvT>* const no_pf = nullptr;

    if (dot_scores) {
      if constexpr (Dot::kEnabled && kBf16) {
        if (transposed && head_rows >= kTransposedDotRows) {
          Dot::tile_scores_transposed(q_bf16, 2 * qs, heads, head_rows, kr, job.k_head_stride, n,
                                      dk, s, reinterpret_cast<uint32_t*>(k_t), pf);
        } else {
          Dot::tile_scores(q_bf16, 2 * qs, heads, head_rows, kr, job.k_head_stride, n, dk, s, pf);
        }
      }
    } else if (transposed) {
      // Head by head: the head's K rows as f32 (converted from bf16 into k_tile, or read in
      // place), transposed into k_t, then every row of the head against it.
      for (int hh = 0; hh < heads; ++hh) {
        const KvT* kh[kKeyTile];
        shift_rows(kr, n, hh * job.k_head_stride, kh);
        if constexpr (kPairOrder) {
          for (int j = 0; j < n; ++j) {
            convert_row<V>(kh[j], dk, k_tile + j * qs, pf);
            k_f32[j] = k_tile + j * qs;
          }
        } else {
          consumed(pf, n * k_bytes);
          for (int j = 0; j < n; ++j) k_f32[j] = kh[j];
        }
        transpose_tile<V>(k_f32, n, dk, k_t);
        const int r0 = hh * head_rows;
        tile_scores_transposed<V>(q + r0 * qs, qs, head_rows, k_t, n, dk,
                                  s + static_cast<int64_t>(r0) * kKeyTile);
      }
    } else if (!convert) {
      tile_scores<V>(q, qs, heads, head_rows, kr, job.k_head_stride, n, dk, s, pf);
    } else if constexpr (kPairOrder) {
      // Head by head: the head's K rows of the tile are converted once, then every row block
      // of the head reads f32.
      for (int hh = 0; hh < heads; ++hh) {
        const KvT* kh[kKeyTile];
        shift_rows(kr, n, hh * job.k_head_stride, kh);
        for (int j = 0; j < n; ++j) {
          convert_row<V>(kh[j], dk, k_tile + j * qs, pf);
          k_f32[j] = k_tile + j * qs;
        }
        const int r0 = hh * head_rows;
        tile_scores<V>(q + r0 * qs, qs, 1, head_rows, k_f32, 0, n, dk,
                       s + static_cast<int64_t>(r0) * kKeyTile, no_pf);
      }
    }

    for (int r = 0; r < rows; ++r) {
      int valid = n;
      if (job.row_key_end != nullptr) {
        valid = static_cast<int>(std::clamp<int64_t>(job.row_key_end[r] - t0, 0, n));
      }
      softmax_row<V>(s + static_cast<int64_t>(r) * kKeyTile, n, valid, score_scale, m[r], l[r],
                     o + r * os, dv);
    }

    for (int hh = 0; hh < heads; ++hh) {
      const int r0 = hh * head_rows;
      const float* p = s + static_cast<int64_t>(r0) * kKeyTile;
      const KvT* vh[kKeyTile];
      shift_rows(vr, n, hh * job.v_head_stride, vh);
      if (dot_values) {
        if constexpr (Dot::kDotValues && kBf16) {
          Dot::tile_values(p, head_rows, vh, n, dv, o + r0 * os, os, pf);
        }
      } else if (!convert) {
        tile_values<V>(p, head_rows, vh, n, dv, o + r0 * os, os, pf);
      } else if constexpr (kPairOrder) {
        // The converted K tile still holds this head's rows when it is the only head (and the
        // scores converted it).
        if (dot_scores || !(v_from_k_tile && heads == 1)) {
          for (int j = 0; j < n; ++j) {
            convert_row<V>(vh[j], dv, v_tile + j * os, pf);
            v_f32[j] = v_tile + j * os;
          }
        } else {
          for (int j = 0; j < n; ++j) v_f32[j] = k_f32[j];
        }
        tile_values<V>(p, head_rows, v_f32, n, dv, o + r0 * os, os, no_pf);
      }
    }
    cur ^= 1;
  }

  for (int r = 0; r < rows; ++r) {
    float* dst = job.out[r];
    if (l[r] > 0.0f) {
      const float inv = 1.0f / kLoadFactor / l[r];
      const float* src = o + r * os;
      for (int64_t i = 0; i < dv; ++i) {
        const int64_t lane = dot_values   ? Dot::value_lane_index(i)
                             : kPairOrder ? pair_lane_index(i, dv, kW)
                                          : i;
        dst[i] = src[lane] * inv;
      }
      *job.lse[r] = (m[r] + std::log2(l[r])) * kLn2;
    } else {
      std::memset(dst, 0, static_cast<size_t>(dv) * sizeof(float));
      *job.lse[r] = kNegInf;
    }
  }
}

// The kernel entry for one ISA: picks the KV element type.
template <class V>
void run_job_for_isa(const AttnJob& job, float* scratch) {
  switch (job.dtype) {
    case KvDType::kBF16:
      run_job<V, uint16_t, NoBf16Dot>(job, scratch);
      return;
    case KvDType::kF8E4M3:
      run_job<V, uint8_t, NoBf16Dot>(job, scratch);
      return;
    case KvDType::kF32:
      run_job<V, float, NoBf16Dot>(job, scratch);
      return;
  }
}

}  // namespace
}  // namespace ctxpar::kernels::detail
