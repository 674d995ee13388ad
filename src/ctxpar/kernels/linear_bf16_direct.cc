#include "ctxpar/kernels/linear_bf16_direct.h"

#include "ctxpar/core/cpu_features.h"

namespace ctxpar::kernels::detail {

void bf16_weight_matmul(const float* x, int64_t ldx, int64_t tokens, const bf16* w, int64_t ldw,
                        int64_t k, int64_t n, float* y, int64_t ldy) {
  if (active_isa() >= Isa::kAvx2) {
    bf16_weight_matmul_avx2(x, ldx, tokens, w, ldw, k, n, y, ldy);
  } else {
    bf16_weight_matmul_portable(x, ldx, tokens, w, ldw, k, n, y, ldy);
  }
}

void bf16_weight_matmul_portable(const float* x, int64_t ldx, int64_t tokens, const bf16* w,
                                 int64_t ldw, int64_t k, int64_t n, float* y, int64_t ldy) {
  // Eight independent partial sums let the compiler keep them in one vector register.
  constexpr int kLanes = 8;
  for (int64_t o = 0; o < n; ++o) {
    const bf16* wrow = w + o * ldw;
    for (int64_t t = 0; t < tokens; ++t) {
      const float* xrow = x + t * ldx;
      float partial[kLanes] = {};
      int64_t i = 0;
      for (; i + kLanes <= k; i += kLanes) {
        for (int j = 0; j < kLanes; ++j) partial[j] += bf16::to_f32(wrow[i + j].bits) * xrow[i + j];
      }
      float sum = 0;
      for (int j = 0; j < kLanes; ++j) sum += partial[j];
      for (; i < k; ++i) sum += bf16::to_f32(wrow[i].bits) * xrow[i];
      y[t * ldy + o] = sum;
    }
  }
}

}  // namespace ctxpar::kernels::detail
