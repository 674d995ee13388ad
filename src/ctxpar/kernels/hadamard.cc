#include "ctxpar/kernels/hadamard.h"

#include <cmath>

#include "ctxpar/core/error.h"

namespace ctxpar::kernels {
namespace {

int64_t row_offset(const Tensor& t, int64_t r) {
  int64_t off = 0;
  for (int dim = t.ndim() - 2; dim >= 0; --dim) {
    off += (r % t.size(dim)) * t.stride(dim);
    r /= t.size(dim);
  }
  return off;
}

// In-place butterflies: stage h combines entries h apart; log2(n) stages.
void fwht_row(float* x, int64_t n) {
  for (int64_t h = 1; h < n; h *= 2) {
    for (int64_t block = 0; block < n; block += 2 * h) {
      float* lo = x + block;
      float* hi = lo + h;
      for (int64_t j = 0; j < h; ++j) {
        const float a = lo[j], b = hi[j];
        lo[j] = a + b;
        hi[j] = a - b;
      }
    }
  }
}

}  // namespace

void hadamard_transform(Tensor& x, bool normalize) {
  CTXPAR_CHECK(x.defined() && x.ndim() >= 1 && x.dtype() == DType::kF32,
               "hadamard_transform: x must be a float32 tensor [..., n], got {}",
               x.defined() ? x.describe() : "an undefined tensor");
  const int64_t n = x.size(-1);
  CTXPAR_CHECK(n >= 1 && (n & (n - 1)) == 0,
               "hadamard_transform: last dim {} of {} must be a power of two (1, 2, 4, ...)", n,
               x.describe());
  CTXPAR_CHECK(x.stride(-1) == 1 || n == 1,
               "hadamard_transform: x {} needs a contiguous last dim, has stride {}", x.describe(),
               x.stride(-1));
  const float scale = normalize ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(n))) : 1;
  const int64_t rows = x.numel() / n;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x.data<float>() + row_offset(x, r);
    fwht_row(row, n);
    if (normalize) {
      for (int64_t i = 0; i < n; ++i) row[i] *= scale;
    }
  }
}

}  // namespace ctxpar::kernels
