// AVX-512 variant of the attention job whose bf16-cache scores are vdpbf16ps dot products:
// q (rounded to bf16, as every variant rounds it for a bf16 cache) and the K rows as loaded,
// 32 values per instruction, where the f32 path spends two conversions and two FMAs. The
// products are exact in f32 either way; only the order of the additions differs, and the
// scale is applied to the finished score. Everything else is run_attention_job_avx512's.
// On an AMD EPYC Zen 4 VM, 1 thread, kernels_attention_bench, KV GB/s against the f32 scores
// in alternated runs: GqaDecode d 128 from DRAM 15.6-16.7 (14.8-15.0), from L2 18.0-19.3
// (16.7-17.2); d 64 12.9 (11.9-12.2); MlaDecode 16 heads 3.6-3.7 (2.9). P·V, still f32 FMAs,
// now takes about two thirds of GQA decode's time.
#if !defined(__AVX512BF16__) || !defined(__AVX512BW__)
#error "attention_kernel_avx512bf16.cc needs -mavx512bf16 -mavx512bw"
#endif

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

// tile_scores (attention_kernel_impl.h) over bf16 q rows in natural order.
struct Bf16Dot {
  static constexpr bool kEnabled = true;
  static constexpr int kDimStep = kDotStep;
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
