#include <cstring>

#include "ctxpar/core/error.h"
#include "ctxpar/core/fp8.h"
#include "ctxpar/kernels/linear_fp8.h"

namespace ctxpar::kernels {

void fp8_linear_reference(const Tensor& x, const Fp8Weight& w, const Tensor* bias,
                          DType activation_dtype, Tensor& y, bool round_weights) {
  const Tensor xc = x.contiguous();
  const Tensor wq = w.weight.contiguous();
  const int64_t tokens = xc.size(0), in = xc.size(1), out = wq.size(0);
  CTXPAR_CHECK(wq.size(1) == in && y.size(0) == tokens && y.size(1) == out,
               "fp8_linear_reference: x {} · W {} does not fit y {}", x.describe(),
               w.weight.describe(), y.describe());
  const auto* q = static_cast<const uint8_t*>(wq.raw());
  const float* s = w.scale_inv.data<float>();
  const int64_t cb = (in + kFp8BlockSize - 1) / kFp8BlockSize;
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t o = 0; o < out; ++o) {
      double acc = bias ? bias->data<float>()[o] : 0.0;
      for (int64_t i = 0; i < in; ++i) {
        float xv = xc.data<float>()[t * in + i];
        if (activation_dtype == DType::kBF16) xv = bf16::to_f32(bf16::from_f32(xv));
        const float scale = w.scaling == Fp8Scaling::kPerRow
                                ? s[o]
                                : s[(o / kFp8BlockSize) * cb + i / kFp8BlockSize];
        const float e4m3 = fp8_e4m3::to_f32(q[o * in + i]);
        // Rounded: the f32 product (as the kernels dequantize) rounded to bf16.
        const double wv = round_weights ? bf16::to_f32(bf16::from_f32(e4m3 * scale))
                                        : static_cast<double>(e4m3) * scale;
        acc += static_cast<double>(xv) * wv;
      }
      float* yp = y.data<float>() + t * y.stride(0) + o * y.stride(1);
      *yp = static_cast<float>(acc);
    }
  }
}

}  // namespace ctxpar::kernels
