// Internal: silu_and_mul's row loop as a template over a simd vector type V (simd.h). Included
// only by activation_kernel_{scalar,avx2,avx512}.cc; internal linkage, so copies compiled with
// different ISA flags never mix at link time.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ctxpar::kernels::detail {
namespace {

constexpr float kSiluLog2e = 1.44269504088896341f;

// silu(g) = g / (1 + e^−g), e^−g = 2^−(g·log2 e). The exponent is capped at 126 (g < −87.3),
// past which exp2 is not defined; the quotient is below 1e-36 there either way, so the cap
// only keeps it finite and sign-correct. For g > 87.3, exp2 gives 0 and silu(g) = g.
template <class V>
void silu_mul_row(const float* gate, const float* up, int64_t n, float* out) {
  constexpr int kW = V::kWidth;
  const V log2e = V::set1(kSiluLog2e);
  const V floor = V::set1(-126.0f);
  const V one = V::set1(1.0f);
  int64_t i = 0;
  for (; i + kW <= n; i += kW) {
    const V g = V::load(gate + i);
    const V e = exp2(V::zero() - max(g * log2e, floor));
    (g / (one + e) * V::load(up + i)).store(out + i);
  }
  for (; i < n; ++i) {
    const float g = gate[i];
    const float e = std::exp2(-std::max(g * kSiluLog2e, -126.0f));
    out[i] = g / (1.0f + e) * up[i];
  }
}

}  // namespace
}  // namespace ctxpar::kernels::detail
