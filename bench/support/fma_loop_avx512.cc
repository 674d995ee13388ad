// AVX-512 FMA loop (compiled with -mavx512f): kFmaChains accumulators, each x = x·a + b, a
// and b hidden from the optimizer so nothing folds.
#include <immintrin.h>

#include "fma_loop.h"

namespace ctxpar::bench::detail {

float fma_loop_avx512(int64_t iterations) {
  __m512 acc[kFmaChains];
  for (int j = 0; j < kFmaChains; ++j) acc[j] = _mm512_set1_ps(0.001f * static_cast<float>(j));
  __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-4f);
  __asm__ volatile("" : "+v"(a), "+v"(b));
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kFmaChains; ++j) acc[j] = _mm512_fmadd_ps(acc[j], a, b);
  }
  __m512 sum = acc[0];
  for (int j = 1; j < kFmaChains; ++j) sum = _mm512_add_ps(sum, acc[j]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  return lanes[0];
}

}  // namespace ctxpar::bench::detail
