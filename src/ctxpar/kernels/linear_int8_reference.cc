// Reference for Int8Linear: the quantization written out in scalar f32 exactly as the header
// states it, then integer dot products and scaling in double.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/linear_int8.h"

namespace ctxpar::kernels {

void int8_linear_reference(const Tensor& x, const Tensor& weight, const Tensor& weight_scale,
                           const Tensor* input_smooth, const Tensor* bias, Tensor& y) {
  CTXPAR_CHECK(x.ndim() == 2 && x.dtype() == DType::kF32 && weight.ndim() == 2 &&
                   weight.dtype() == DType::kI8 && x.size(1) == weight.size(1),
               "int8_linear_reference: x {} and weight {} must be float32[tokens, in] and "
               "int8[out, in]",
               x.describe(), weight.describe());
  const int64_t tokens = x.size(0), in = x.size(1), out = weight.size(0);
  CTXPAR_CHECK(weight_scale.ndim() == 1 && weight_scale.size(0) == out &&
                   weight_scale.dtype() == DType::kF32,
               "int8_linear_reference: weight_scale must be float32[{}], got {}", out,
               weight_scale.describe());
  CTXPAR_CHECK(
      input_smooth == nullptr || (input_smooth->ndim() == 1 && input_smooth->size(0) == in &&
                                  input_smooth->dtype() == DType::kF32),
      "int8_linear_reference: input_smooth must be float32[{}]", in);
  CTXPAR_CHECK(bias == nullptr ||
                   (bias->ndim() == 1 && bias->size(0) == out && bias->dtype() == DType::kF32),
               "int8_linear_reference: bias must be float32[{}]", out);
  CTXPAR_CHECK(y.ndim() == 2 && y.dtype() == DType::kF32 && y.size(0) == tokens && y.size(1) == out,
               "int8_linear_reference: y must be float32[{}, {}], got {}", tokens, out,
               y.describe());
  std::vector<float> xs(static_cast<size_t>(in));
  std::vector<int> q(static_cast<size_t>(in));
  for (int64_t t = 0; t < tokens; ++t) {
    float amax = 0;
    for (int64_t i = 0; i < in; ++i) {
      const float xv = x.data<float>()[t * x.stride(0) + i * x.stride(1)];
      xs[i] = input_smooth ? xv / input_smooth->data<float>()[i * input_smooth->stride(0)] : xv;
      if (std::fabs(xs[i]) > amax) amax = std::fabs(xs[i]);
    }
    const float sx = amax > 0 ? amax / 127.0f : 1.0f;
    for (int64_t i = 0; i < in; ++i) {
      q[i] = static_cast<int>(std::clamp(std::nearbyint(xs[i] / sx), -127.0f, 127.0f));
    }
    for (int64_t o = 0; o < out; ++o) {
      int64_t acc = 0;
      for (int64_t i = 0; i < in; ++i) {
        acc += q[i] * weight.data<int8_t>()[o * weight.stride(0) + i * weight.stride(1)];
      }
      double v = static_cast<double>(acc) * weight_scale.data<float>()[o * weight_scale.stride(0)] *
                 static_cast<double>(sx);
      if (bias) v += bias->data<float>()[o * bias->stride(0)];
      y.data<float>()[t * y.stride(0) + o * y.stride(1)] = static_cast<float>(v);
    }
  }
}

}  // namespace ctxpar::kernels
