// Baseline x86-64 variant of the decode GEMV: the shared template over simd::Vec1.
#include "ctxpar/kernels/linear_gemv_impl.h"
#include "ctxpar/kernels/simd_scalar.h"

namespace ctxpar::kernels::detail {

void gemv_bf16_scalar(const GemvArgs& a) {
  gemv_rows<simd::Vec1, uint16_t>(a);
}

void gemv_f32_scalar(const GemvArgs& a) {
  gemv_rows<simd::Vec1, float>(a);
}

void gemv_t_bf16_scalar(const GemvTArgs& a) {
  gemv_t_rows<simd::Vec1>(a);
}

}  // namespace ctxpar::kernels::detail
