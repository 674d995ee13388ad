// Double-precision reference for silu_and_mul.
#include <cmath>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/activation.h"

namespace ctxpar::kernels {

void silu_and_mul_reference(const Tensor& x, Tensor& y) {
  CTXPAR_CHECK(x.ndim() == 2 && y.ndim() == 2 && x.size(0) == y.size(0) &&
                   x.size(1) == 2 * y.size(1) && y.dtype() == DType::kF32,
               "silu_and_mul_reference: x {} and y {} must be [tokens, 2·I] and float32[tokens, I]",
               x.describe(), y.describe());
  const int64_t inter = y.size(1);
  for (int64_t t = 0; t < x.size(0); ++t) {
    for (int64_t i = 0; i < inter; ++i) {
      const double g = x.item_as_double({t, i});
      const double u = x.item_as_double({t, inter + i});
      y.data<float>()[t * y.stride(0) + i * y.stride(1)] =
          static_cast<float>(g / (1.0 + std::exp(-g)) * u);
    }
  }
}

}  // namespace ctxpar::kernels
