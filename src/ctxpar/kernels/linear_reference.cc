// Double-precision reference for Linear: the plain triple loop, sharing no code with the
// optimized paths.
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/linear.h"

namespace ctxpar::kernels {
namespace {

// A 2-D float tensor (f32 or bf16, any strides) copied into row-major doubles.
std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  const int64_t rows = t.size(0), cols = t.size(1);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const int64_t off = r * t.stride(0) + c * t.stride(1);
      out[r * cols + c] =
          t.dtype() == DType::kBF16 ? to_float(t.data<bf16>()[off]) : t.data<float>()[off];
    }
  }
  return out;
}

}  // namespace

void linear_reference(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y) {
  CTXPAR_CHECK(x.ndim() == 2 && w.ndim() == 2 && x.size(1) == w.size(1),
               "linear_reference: x {} and w {} must be [tokens, in] and [out, in]", x.describe(),
               w.describe());
  CTXPAR_CHECK(x.dtype() == DType::kF32 && (w.dtype() == DType::kF32 || w.dtype() == DType::kBF16),
               "linear_reference: x must be float32 and w float32 or bfloat16, got {} and {}",
               x.describe(), w.describe());
  CTXPAR_CHECK(
      y.ndim() == 2 && y.size(0) == x.size(0) && y.size(1) == w.size(0) && y.dtype() == DType::kF32,
      "linear_reference: y must be float32[{}, {}], got {}", x.size(0), w.size(0), y.describe());
  CTXPAR_CHECK(bias == nullptr || (bias->ndim() == 1 && bias->size(0) == w.size(0) &&
                                   bias->dtype() == DType::kF32),
               "linear_reference: bias must be float32[{}], got {}", w.size(0),
               bias ? bias->describe() : "");
  const int64_t tokens = x.size(0), in = x.size(1), out = w.size(0);
  const std::vector<double> xd = to_doubles(x), wd = to_doubles(w);
  float* yp = y.data<float>();
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t o = 0; o < out; ++o) {
      double sum = bias != nullptr ? bias->data<float>()[o * bias->stride(0)] : 0.0;
      for (int64_t i = 0; i < in; ++i) sum += xd[t * in + i] * wd[o * in + i];
      yp[t * y.stride(0) + o * y.stride(1)] = static_cast<float>(sum);
    }
  }
}

}  // namespace ctxpar::kernels
