// Double-precision RoPE reference: angles, cos/sin and the rotation in double, per element.
#include <cmath>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/rope.h"

namespace ctxpar::kernels {

void rope_reference(Tensor& x, const Tensor& positions, int64_t rotary_dim, double theta,
                    const RopeScaling& scaling, RopeStyle style) {
  CTXPAR_CHECK(
      (x.ndim() == 2 || x.ndim() == 3) && x.dtype() == DType::kF32 && x.size(-1) >= rotary_dim,
      "rope_reference: x must be float32 [tokens, (heads,) >= {}], got {}", rotary_dim,
      x.describe());
  CTXPAR_CHECK(positions.ndim() == 1 && positions.size(0) == x.size(0),
               "rope_reference: positions must be [{}], got {}", x.size(0), positions.describe());
  const std::vector<double> inv_freq = rope_inv_freq(rotary_dim, theta, scaling);
  const double mscale = rope_magnitude_scale(scaling);
  const int64_t half = rotary_dim / 2;
  const int64_t heads = x.ndim() == 3 ? x.size(1) : 1;
  for (int64_t t = 0; t < x.size(0); ++t) {
    const double p = positions.item_as_double({t});
    for (int64_t h = 0; h < heads; ++h) {
      float* head = x.data<float>() + t * x.stride(0) + (x.ndim() == 3 ? h * x.stride(1) : 0);
      for (int64_t j = 0; j < half; ++j) {
        const int64_t ia = style == RopeStyle::kRotateHalf ? j : 2 * j;
        const int64_t ib = style == RopeStyle::kRotateHalf ? j + half : 2 * j + 1;
        const double a = head[ia * x.stride(-1)], b = head[ib * x.stride(-1)];
        const double c = std::cos(p * inv_freq[j]) * mscale, s = std::sin(p * inv_freq[j]) * mscale;
        head[ia * x.stride(-1)] = static_cast<float>(a * c - b * s);
        head[ib * x.stride(-1)] = static_cast<float>(b * c + a * s);
      }
    }
  }
}

}  // namespace ctxpar::kernels
