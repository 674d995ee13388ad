#include "ctxpar/kernels/linear_int8_direct.h"

#include "ctxpar/core/cpu_features.h"

namespace ctxpar::kernels::detail {

void int8_weight_matmul(const int8_t* q, int64_t ldq, int64_t tokens, const int8_t* w, int64_t ldw,
                        int64_t k, int64_t n, const float* column_scale, float* y, int64_t ldy) {
  if (active_isa() >= Isa::kAvx2) {
    int8_weight_matmul_avx2(q, ldq, tokens, w, ldw, k, n, column_scale, y, ldy);
  } else {
    int8_weight_matmul_portable(q, ldq, tokens, w, ldw, k, n, column_scale, y, ldy);
  }
}

void int8_weight_matmul_portable(const int8_t* q, int64_t ldq, int64_t tokens, const int8_t* w,
                                 int64_t ldw, int64_t k, int64_t n, const float* column_scale,
                                 float* y, int64_t ldy) {
  for (int64_t o = 0; o < n; ++o) {
    const int8_t* wrow = w + o * ldw;
    for (int64_t t = 0; t < tokens; ++t) {
      const int8_t* qrow = q + t * ldq;
      int32_t acc = 0;
      for (int64_t i = 0; i < k; ++i) acc += int32_t{qrow[i]} * int32_t{wrow[i]};
      y[t * ldy + o] = static_cast<float>(acc) * column_scale[o];
    }
  }
}

}  // namespace ctxpar::kernels::detail
