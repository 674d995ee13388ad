#include "ctxpar/kernels/merge_kernel.h"

#include <cmath>
#include <limits>

#include "ctxpar/core/error.h"

namespace ctxpar::kernels::detail {

float merge_weights(int n, const float* lse, float* w) {
  double m = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < n; ++i) {
    if (std::isfinite(lse[i]) && lse[i] > m) m = lse[i];
  }
  if (std::isinf(m)) {
    for (int i = 0; i < n; ++i) w[i] = 0.0f;
    return -std::numeric_limits<float>::infinity();
  }
  double sum = 0.0;
  for (int i = 0; i < n; ++i) {
    if (std::isfinite(lse[i])) sum += std::exp(static_cast<double>(lse[i]) - m);
  }
  const double merged = m + std::log(sum);  // sum >= 1: the max term contributes exp(0)
  for (int i = 0; i < n; ++i) {
    w[i] = std::isfinite(lse[i]) ? static_cast<float>(std::exp(lse[i] - merged)) : 0.0f;
  }
  return static_cast<float>(merged);
}

void check_isa_available(Isa isa) {
  const CpuFeatures& f = cpu_features();
  const bool ok =
      isa == Isa::kScalar || (isa == Isa::kAvx2 && f.avx2_fma) || (isa == Isa::kAvx512 && f.avx512);
  CTXPAR_CHECK(ok, "ISA {} was asked for but this CPU lacks it (avx2+fma: {}, avx512: {})",
               isa_name(isa), f.avx2_fma, f.avx512);
}

const MergeKernels& merge_kernels(Isa isa) {
  check_isa_available(isa);
  switch (isa) {
    case Isa::kAvx512:
      return kMergeKernelsAvx512;
    case Isa::kAvx2:
      return kMergeKernelsAvx2;
    case Isa::kScalar:
      break;
  }
  return kMergeKernelsScalar;
}

}  // namespace ctxpar::kernels::detail
