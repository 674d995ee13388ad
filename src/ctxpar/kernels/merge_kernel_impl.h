// Internal: the merge vector loops as templates over a simd vector type (simd.h). Included
// only by merge_kernel_{scalar,avx2,avx512}.cc; everything here has internal linkage so the
// copies compiled with different ISA flags never mix at link time.
#pragma once

#include <cstdint>

#include "ctxpar/kernels/merge_kernel.h"

namespace ctxpar::kernels::detail {
namespace {

template <class V>
void weighted_sum_row(int n, const float* const* o, const float* w, int64_t d, float* out) {
  constexpr int kW = V::kWidth;
  int64_t i = 0;
  // Two vectors per step keep two independent FMA chains per partial.
  for (; i + 2 * kW <= d; i += 2 * kW) {
    V a = V::zero(), b = V::zero();
    for (int p = 0; p < n; ++p) {
      const V wp = V::set1(w[p]);
      a = mul_add(wp, V::load(o[p] + i), a);
      b = mul_add(wp, V::load(o[p] + i + kW), b);
    }
    a.store(out + i);
    b.store(out + i + kW);
  }
  for (; i < d; ++i) {
    float acc = 0.0f;
    for (int p = 0; p < n; ++p) acc += w[p] * o[p][i];
    out[i] = acc;
  }
}

template <class V>
void scale_row(float* o, int64_t d, float s) {
  constexpr int kW = V::kWidth;
  const V sv = V::set1(s);
  int64_t i = 0;
  if (s == 0.0f) {
    for (; i + kW <= d; i += kW) V::zero().store(o + i);
    for (; i < d; ++i) o[i] = 0.0f;
    return;
  }
  for (; i + kW <= d; i += kW) (V::load(o + i) * sv).store(o + i);
  for (; i < d; ++i) o[i] *= s;
}

template <class V>
constexpr MergeKernels make_merge_kernels() {
  return MergeKernels{&weighted_sum_row<V>, &scale_row<V>};
}

}  // namespace
}  // namespace ctxpar::kernels::detail
