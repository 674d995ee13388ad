// AVX-512 variant of the attention job for CPUs whose vdpbf16ps is fast: a bf16 cache's
// scores are dot products of q (rounded to bf16, as every variant rounds it for a bf16 cache)
// with the K rows as loaded, 32 values per instruction, where the f32 path spends two
// conversions and two FMAs; the products are exact in f32, only the order of the additions
// differs, and the scale is applied to the finished score; heads of many rows (prefill) score
// against the K tile transposed into bf16 pairs instead, a broadcast q pair times 16 keys per
// instruction, which leaves no horizontal reductions. P·V is a dot product too: the
// softmax weights rounded to bf16 (as GPU flash attention rounds them), two keys per
// instruction against V rows interleaved in key pairs by word unpacks; each value of o is
// then within ~2^-9·Σ_j p_j·|v_j| / Σ_j p_j of exact (attention.h), the lse keeps f32 precision.
// Everything else is run_attention_job_avx512's.
// On an AMD EPYC Zen 4 VM, 1 thread, kernels_attention_bench, KV GB/s in alternated runs:
// - the dot-product scores against f32 FMAs: GqaDecode d 128 from DRAM 15.6-16.7 (14.8-15.0),
//   from L2 18.0-19.3 (16.7-17.2); d 64 12.9 (11.9-12.2); MlaDecode 16 heads 3.6-3.7 (2.9);
// - the dot-product P·V against f32 FMAs over converted V rows (two thirds of GQA decode's
//   time before): MlaDecode 16 heads 5.1-5.4 (3.5-4.0), 2 threads 10.5-10.7 (7.3-7.9);
//   GqaDecode d 128 from L2 23.2-25.0 (17.3-20.8), from DRAM in order 19.4-20.3 (17.0-17.8),
//   in shuffled blocks 16.9-18.3 with kPvDotPrefetchKeysFewRows (15.7-17.3; bound by memory,
//   not by the products); d 64 13.0-13.4 (10.4-12.9). Weights as two bf16 terms (f32-exact,
//   as the AMX variant keeps them) read as the f32 path: MlaDecode 4.0-4.1, GqaDecode from L2
//   20.4-20.6.
#if !defined(__AVX512BF16__) || !defined(__AVX512BW__)
#error "attention_kernel_avx512bf16.cc needs -mavx512bf16 -mavx512bw"
#endif

#include <cstring>

#include "ctxpar/kernels/attention_kernel_impl.h"
#include "ctxpar/kernels/simd_avx512.h"

namespace ctxpar::kernels::detail {
namespace {

using simd::Vec16;
constexpr int kDotStep = 32;  // bf16 values per zmm

// s[rb·ss + kb] = q[rb]·k[kb] (unscaled) for RB rows of bf16 q (row stride qs) and KB keys.
template <int RB, int KB>
inline void dot_block(const uint16_t* q, int64_t qs, const uint16_t* const* k, int64_t d, float* s,
                      int64_t ss, TilePrefetch<uint16_t>* pf) {
  __m512 acc[RB][KB];
  for (int rb = 0; rb < RB; ++rb) {
    for (int kb = 0; kb < KB; ++kb) acc[rb][kb] = _mm512_setzero_ps();
  }
  const int64_t steps = d / kDotStep;
  consumed(pf, KB * d * static_cast<int64_t>(sizeof(uint16_t)));
  for (int64_t p = 0; p < steps; ++p) {
    __m512bh qv[RB];
    for (int rb = 0; rb < RB; ++rb) {
      qv[rb] = (__m512bh)_mm512_loadu_si512(q + rb * qs + p * kDotStep);
    }
    for (int kb = 0; kb < KB; ++kb) {
      const __m512bh kv = (__m512bh)_mm512_loadu_si512(k[kb] + p * kDotStep);
      for (int rb = 0; rb < RB; ++rb) acc[rb][kb] = _mm512_dpbf16_ps(acc[rb][kb], qv[rb], kv);
    }
  }
  if constexpr (RB == 4 && KB == 4) {
    [&]<int... I>(std::integer_sequence<int, I...>) {
      reduce_add16(Vec16{acc[I / 4][I % 4]}..., s, ss);
    }
    (std::make_integer_sequence<int, 16>{});
  } else {
    for (int rb = 0; rb < RB; ++rb) {
      for (int kb = 0; kb < KB; ++kb) s[rb * ss + kb] = _mm512_reduce_add_ps(acc[rb][kb]);
    }
  }
}

// o[rb] += Σ_j w[rb]_j·v[j] over keys [j0, j1) (j0 and j1 even) for RB rows, value steps
// [p0, p0 + PS) of kDotStep values. w[rb·ws + j/2] holds the bf16 weights of keys j and j + 1 (0
// for a key past the tile, whose row pointer repeats the last row); a value step's two accumulators
// hold its values in unpack order (Bf16Dot::value_lane_index).
template <int RB, int PS>
[[gnu::always_inline]] inline void pv_dot_keys(const uint32_t* w, int64_t ws,
                                               const uint16_t* const* v, int j0, int j1, int64_t p0,
                                               float* o, int64_t os) {
  __m512 acc[RB][2 * PS];
  for (int rb = 0; rb < RB; ++rb) {
    for (int x = 0; x < 2 * PS; ++x) {
      acc[rb][x] = _mm512_loadu_ps(o + rb * os + p0 * kDotStep + x * 16);
    }
  }
  for (int j = j0; j < j1; j += 2) {
    __m512bh lo[PS], hi[PS];
    for (int ps = 0; ps < PS; ++ps) {
      const __m512i a = _mm512_loadu_si512(v[j] + (p0 + ps) * kDotStep);
      const __m512i b = _mm512_loadu_si512(v[j + 1] + (p0 + ps) * kDotStep);
      lo[ps] = (__m512bh)_mm512_unpacklo_epi16(a, b);
      hi[ps] = (__m512bh)_mm512_unpackhi_epi16(a, b);
    }
    for (int rb = 0; rb < RB; ++rb) {
      const __m512bh wj = (__m512bh)_mm512_set1_epi32(static_cast<int>(w[rb * ws + j / 2]));
      for (int ps = 0; ps < PS; ++ps) {
        acc[rb][2 * ps] = _mm512_dpbf16_ps(acc[rb][2 * ps], wj, lo[ps]);
        acc[rb][2 * ps + 1] = _mm512_dpbf16_ps(acc[rb][2 * ps + 1], wj, hi[ps]);
      }
    }
  }
  for (int rb = 0; rb < RB; ++rb) {
    for (int x = 0; x < 2 * PS; ++x) {
      _mm512_storeu_ps(o + rb * os + p0 * kDotStep + x * 16, acc[rb][x]);
    }
  }
}

// Keys per report to an L2 prefetcher (AMD) of the dot-product P·V for blocks of up to 4 rows
// (GQA decode), whose accumulators are cheap to reload: requests spread more evenly than in
// runs of kPvPrefetchKeysL2. Zen 4, 1 thread, kernels_attention_bench GqaDecode, KV GB/s in
// three alternated runs: d 128 in shuffled blocks 17.0-18.3 against 14.3-16.0, in order
// 19.3-20.9 against 19.9-20.5, d 64 14.1-15.0 against 13.0-13.9; MLA's 6-row blocks lost
// 10% in runs of 16 (5.0-5.1 against 5.6), and runs of 8 or 64 lost everywhere.
constexpr int kPvDotPrefetchKeysFewRows = 16;
// Keys per report to an L1 prefetcher (Intel): twice the f32 P·V's kPvPrefetchKeysL1, so a
// run holds as many key steps (pairs here) per load and store of the accumulators as there.
// Runs of 8 keys lost 20-35% on Zen 4 to those loads and stores; unmeasured on Intel.
constexpr int kPvDotPrefetchKeysL1 = 2 * kPvPrefetchKeysL1;

// pv_dot_keys over the n keys of a tile (rounded up to a pair) and all dv / kDotStep value steps,
// two steps per pass over the keys (RB · 4 accumulators), in key runs reported to pf as
// pv_pass (attention_kernel_impl.h) does.
template <int RB>
inline void pv_dot_block(const uint32_t* w, int64_t ws, const uint16_t* const* v, int n, int64_t dv,
                         float* o, int64_t os, TilePrefetch<uint16_t>* pf) {
  constexpr int kPs = 2;
  const int64_t steps = dv / kDotStep;
  constexpr int kL2Run = RB <= 4 ? kPvDotPrefetchKeysFewRows : kPvPrefetchKeysL2;
  const int run = pf == nullptr ? kKeyTile : pf->to_l2() ? kL2Run : kPvDotPrefetchKeysL1;
  const int n2 = (n + 1) / 2 * 2;
  for (int64_t p = 0; p < steps;) {
    const int ps = steps - p >= kPs ? kPs : 1;
    for (int j0 = 0; j0 < n2; j0 += run) {
      const int j1 = std::min(n2, j0 + run);
      consumed(pf, (j1 - j0) * ps * kDotStep * static_cast<int64_t>(sizeof(uint16_t)));
      if (ps == kPs) {
        pv_dot_keys<RB, kPs>(w, ws, v, j0, j1, p, o, os);
      } else {
        pv_dot_keys<RB, 1>(w, ws, v, j0, j1, p, o, os);
      }
    }
    p += ps;
  }
}

// s[r·kKeyTile + j] = q[r]·k[j] (unscaled) for R rows of bf16 q (row stride qs) and the
// kKeyTile keys of the transposed tile kt: per dimension pair, the tile's 4 key vectors times
// each row's q pair broadcast, no reduction.
template <int R>
inline void dot_qkt_block(const uint16_t* q, int64_t qs, const uint32_t* kt, int64_t d, float* s) {
  constexpr int kNv = kKeyTile / 16;
  __m512 acc[R][kNv];
  for (int r = 0; r < R; ++r) {
    for (int x = 0; x < kNv; ++x) acc[r][x] = _mm512_setzero_ps();
  }
  for (int64_t i = 0; i < d / 2; ++i) {
    __m512bh kv[kNv];
    for (int x = 0; x < kNv; ++x) {
      kv[x] = (__m512bh)_mm512_loadu_si512(kt + i * kKeyTile + x * 16);
    }
    for (int r = 0; r < R; ++r) {
      uint32_t pair;
      std::memcpy(&pair, q + r * qs + 2 * i, sizeof(pair));
      const __m512bh qb = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
      for (int x = 0; x < kNv; ++x) acc[r][x] = _mm512_dpbf16_ps(acc[r][x], qb, kv[x]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int x = 0; x < kNv; ++x) _mm512_storeu_ps(s + r * kKeyTile + x * 16, acc[r][x]);
  }
}

// The dot-product scores and values of run_job (attention_kernel_impl.h).
struct Bf16Dot {
  static constexpr bool kEnabled = true;
  static constexpr int kDimStep = kDotStep;
  static constexpr bool kDotValues = true;
  static constexpr int kValueStep = kDotStep;
  // Where value i of an o row (dv a multiple of kValueStep) sits: vpunpck{l,h}wd pair the
  // low / high four values of each 128-bit lane of two keys' rows, so accumulator 0 of a
  // step holds values 8c + t and accumulator 1 values 8c + 4 + t of lane c, t < 4.
  static int64_t value_lane_index(int64_t i) {
    const int64_t base = i / kValueStep * kValueStep, k = i - base;
    const int64_t lane = k / 8, t = k % 8;
    return base + (t / 4) * 16 + lane * 4 + t % 4;
  }
  // o[r] += Σ_j bf16(p[r·kKeyTile + j])·v[j] for the rows of one KV head; p: the tile's f32
  // weights, 0 from key n up to a multiple of 16; v: the head's n rows; only the first row
  // block reports its reads to pf.
  static void tile_values(const float* p, int rows, const uint16_t* const* v, int n, int64_t dv,
                          float* o, int64_t os, TilePrefetch<uint16_t>* pf) {
    const int n2 = (n + 1) / 2 * 2;
    const uint16_t* vv[kKeyTile + 1];  // an odd tile's last key pairs with itself (weight 0)
    for (int j = 0; j < n; ++j) vv[j] = v[j];
    vv[n] = v[n - 1];
    constexpr int kRows = 6;  // 6 rows × 2 steps: 24 accumulators, 4 unpacked values, 1 weight
    constexpr int64_t ws = kKeyTile / 2;
    alignas(64) uint32_t w[kRows * ws];  // the row block's weights, key pairs as bf16 pairs
    const int blocks = (rows + kRows - 1) / kRows;
    const int per = (rows + blocks - 1) / blocks;
    for (int r = 0; r < rows; r += per) {
      const int rb = std::min(per, rows - r);
      for (int x = 0; x < rb; ++x) {
        const float* pr = p + static_cast<int64_t>(r + x) * kKeyTile;
        for (int j = 0; j < n2; j += 32) {
          const __m512 a = _mm512_loadu_ps(pr + j);
          const __m512 b = j + 16 < n2 ? _mm512_loadu_ps(pr + j + 16) : _mm512_setzero_ps();
          _mm512_storeu_si512(w + x * ws + j / 2, (__m512i)_mm512_cvtne2ps_pbh(b, a));
        }
      }
      float* orow = o + r * os;
      TilePrefetch<uint16_t>* first = r == 0 ? pf : nullptr;
      [&]<int... R>(std::integer_sequence<int, R...>) {  // pv_dot_block<rb>
        ((rb == R + 1 && (pv_dot_block<R + 1>(w, ws, vv, n, dv, orow, os, first), true)) || ...);
      }
      (std::make_integer_sequence<int, kRows>{});
    }
  }
  // tile_scores for heads of many rows (prefill): each head's K tile transposed into bf16
  // pairs once (kt: [dk / 2, kKeyTile] pairs), then dot products of broadcast q pairs against
  // 16 keys at a time with no reduction; scores of the tile's columns n to kKeyTile are 0.
  static void tile_scores_transposed(const uint16_t* q, int64_t qs, int heads, int head_rows,
                                     const uint16_t* const* k, int64_t head_stride, int n,
                                     int64_t dk, float* s, uint32_t* kt,
                                     TilePrefetch<uint16_t>* pf) {
    constexpr int kR = 6;  // 6 × 4 accumulators, 4 key vectors, 1 broadcast
    for (int hh = 0; hh < heads; ++hh) {
      const uint16_t* kh[kKeyTile];
      shift_rows(k, n, hh * head_stride, kh);
      consumed(pf, n * dk * static_cast<int64_t>(sizeof(uint16_t)));
      // The rows as dk / 2 bf16 pairs: transpose_tile moves 32-bit lanes through vector loads
      // and stores only (dk / 2 is a multiple of 16, so its scalar tail never runs).
      const float* kf[kKeyTile];
      for (int j = 0; j < n; ++j) kf[j] = reinterpret_cast<const float*>(kh[j]);
      transpose_tile<Vec16>(kf, n, dk / 2, reinterpret_cast<float*>(kt));
      for (int r = hh * head_rows; r < (hh + 1) * head_rows; r += kR) {
        const int rb = std::min(kR, (hh + 1) * head_rows - r);
        const uint16_t* qr = q + r * qs;
        float* sr = s + static_cast<int64_t>(r) * kKeyTile;
        [&]<int... R>(std::integer_sequence<int, R...>) {  // dot_qkt_block<rb>
          ((rb == R + 1 && (dot_qkt_block<R + 1>(qr, qs, kt, dk, sr), true)) || ...);
        }
        (std::make_integer_sequence<int, kR>{});
      }
    }
  }
  static void tile_scores(const uint16_t* q, int64_t qs, int heads, int head_rows,
                          const uint16_t* const* k, int64_t head_stride, int n, int64_t dk,
                          float* s, TilePrefetch<uint16_t>* pf) {
    for_score_blocks<4>(
        heads, head_rows, k, head_stride, n, pf,
        [&]<int KB>(std::integral_constant<int, KB>, int rb, int r, const uint16_t* const* kh,
                    int j, TilePrefetch<uint16_t>* first) {
          const uint16_t* qr = q + r * qs;
          float* sr = s + static_cast<int64_t>(r) * kKeyTile + j;
          switch (rb) {
            case 4:
              dot_block<4, KB>(qr, qs, kh, dk, sr, kKeyTile, first);
              break;
            case 3:
              dot_block<3, KB>(qr, qs, kh, dk, sr, kKeyTile, first);
              break;
            case 2:
              dot_block<2, KB>(qr, qs, kh, dk, sr, kKeyTile, first);
              break;
            default:
              dot_block<1, KB>(qr, qs, kh, dk, sr, kKeyTile, first);
              break;
          }
        });
  }
};

}  // namespace

void run_attention_job_avx512bf16(const AttnJob& job, float* scratch) {
  if (job.dtype != KvDType::kBF16) {
    run_attention_job_avx512(job, scratch);
    return;
  }
  run_job<Vec16, uint16_t, Bf16Dot>(job, scratch);
}

}  // namespace ctxpar::kernels::detail
