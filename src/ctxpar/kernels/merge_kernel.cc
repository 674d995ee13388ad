#include "ctxpar/kernels/merge_kernel.h"

#include <cmath>
#include <limits>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/isa_dispatch.h"

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

const MergeKernels& merge_kernels(Isa isa) {
  return *for_isa(isa, &kMergeKernelsScalar, &kMergeKernelsAvx2, &kMergeKernelsAvx512);
}

}  // namespace ctxpar::kernels::detail
