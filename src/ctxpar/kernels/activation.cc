#include "ctxpar/kernels/activation.h"

#include <cmath>

#include "ctxpar/core/error.h"

namespace ctxpar::kernels {
namespace {

void check_silu_and_mul_shapes(const char* op, const Tensor& x, const Tensor& y) {
  CTXPAR_CHECK(x.defined() && x.ndim() == 2 && x.dtype() == DType::kF32 && x.size(1) % 2 == 0,
               "{}: x must be float32 [tokens, 2·I] (even last dim), got {}", op,
               x.defined() ? x.describe() : "an undefined tensor");
  CTXPAR_CHECK(y.defined() && y.ndim() == 2 && y.dtype() == DType::kF32 && y.size(0) == x.size(0) &&
                   y.size(1) == x.size(1) / 2,
               "{}: y must be float32 [{}, {}] for x {}, got {}", op, x.size(0), x.size(1) / 2,
               x.describe(), y.defined() ? y.describe() : "an undefined tensor");
  CTXPAR_CHECK((x.stride(1) == 1 || x.size(1) <= 1) && (y.stride(1) == 1 || y.size(1) <= 1),
               "{}: x {} and y {} need contiguous last dims (strides {} and {})", op, x.describe(),
               y.describe(), x.stride(1), y.stride(1));
}

}  // namespace

void silu_and_mul(const Tensor& x, Tensor& y) {
  check_silu_and_mul_shapes("silu_and_mul", x, y);
  const int64_t inter = y.size(1);
  for (int64_t t = 0; t < x.size(0); ++t) {
    const float* gate = x.data<float>() + t * x.stride(0);
    const float* up = gate + inter;
    float* out = y.data<float>() + t * y.stride(0);
    for (int64_t i = 0; i < inter; ++i) {
      const float g = gate[i];
      out[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
  }
}

}  // namespace ctxpar::kernels
