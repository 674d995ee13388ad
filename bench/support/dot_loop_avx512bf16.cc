// AVX-512 BF16 dot-product loop (compiled with -mavx512f -mavx512bf16): kFmaChains
// accumulators, each x = x + a0·b0 + a1·b1 per f32 lane (one vdpbf16ps: 32 multiply-adds), the
// bf16 pairs hidden from the optimizer so nothing folds. The pairs' products are powers of two,
// so every partial sum is exact in f32 and the test can ask for the exact total.
#include <immintrin.h>

#include "fma_loop.h"

namespace ctxpar::bench::detail {

float dot_loop_avx512bf16(int64_t iterations) {
  __m512 acc[kFmaChains];
  for (int j = 0; j < kFmaChains; ++j)
    acc[j] = _mm512_set1_ps(kDotLoopStart * static_cast<float>(j));
  // bf16 (0.5, 0.25) and (2^-10, 2^-10): each step adds 0.75 · 2^-10 to every lane.
  __m512i a = _mm512_set1_epi32(0x3e803f00), b = _mm512_set1_epi32(0x3a803a80);
  __asm__ volatile("" : "+v"(a), "+v"(b));
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kFmaChains; ++j) {
      acc[j] = _mm512_dpbf16_ps(acc[j], (__m512bh)a, (__m512bh)b);
    }
  }
  __m512 sum = acc[0];
  for (int j = 1; j < kFmaChains; ++j) sum = _mm512_add_ps(sum, acc[j]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  return lanes[0];
}

}  // namespace ctxpar::bench::detail
