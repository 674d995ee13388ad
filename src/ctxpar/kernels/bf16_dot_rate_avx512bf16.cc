// The probe behind onednn_native_bf16 (linear_matmul_cache.h): multiply-adds per second of
// the AVX-512 BF16 dot product against the f32 FMA on this core. Compiled with AVX-512 BF16
// flags; call only where the CPU has it.
#include <immintrin.h>

#include <algorithm>
#include <chrono>

#include "ctxpar/kernels/linear_matmul_cache.h"

namespace ctxpar::kernels::detail {
namespace {

constexpr int64_t kSteps = 1 << 16;  // × 12 instructions: ~0.6 ms of vdpbf16ps at its slowest

// Twelve independent accumulator chains cover either instruction's latency, so the loop runs
// at the issue rate; the empty asm keeps the chains in registers and the loop from being
// folded away.
template <bool kDot>
double instructions_per_second() {
  __m512 a[12];
  for (int i = 0; i < 12; ++i) a[i] = _mm512_set1_ps(static_cast<float>(i));
  const __m512bh one_pairs = (__m512bh)_mm512_set1_epi32(0x3f803f80);  // bf16 pairs (1, 1)
  const __m512 x = _mm512_set1_ps(1.0001f), y = _mm512_set1_ps(0.9999f);
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < kSteps; ++s) {
    for (int i = 0; i < 12; ++i) {
      if constexpr (kDot) {
        a[i] = _mm512_dpbf16_ps(a[i], one_pairs, one_pairs);
      } else {
        a[i] = _mm512_fmadd_ps(x, y, a[i]);
      }
    }
    asm volatile(""
                 : "+v"(a[0]), "+v"(a[1]), "+v"(a[2]), "+v"(a[3]), "+v"(a[4]), "+v"(a[5]),
                   "+v"(a[6]), "+v"(a[7]), "+v"(a[8]), "+v"(a[9]), "+v"(a[10]), "+v"(a[11]));
  }
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return 12.0 * kSteps / std::max(sec, 1e-9);
}

}  // namespace

double bf16_dot_to_fma_mac_ratio() {
  double dot = 0.0, fma = 0.0;
  for (int round = 0; round < 3; ++round) {  // best of three, alternated
    dot = std::max(dot, instructions_per_second<true>());
    fma = std::max(fma, instructions_per_second<false>());
  }
  // vdpbf16ps does 32 multiply-adds per zmm, vfmadd231ps 16.
  return (32.0 * dot) / (16.0 * fma);
}

}  // namespace ctxpar::kernels::detail
