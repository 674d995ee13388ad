// AVX2 + FMA variant of the decode GEMV: the shared template over simd::Vec8.
#include "ctxpar/kernels/linear_gemv_impl.h"
#include "ctxpar/kernels/simd_avx2.h"

namespace ctxpar::kernels::detail {

void gemv_bf16_avx2(const GemvArgs& a) {
  if (a.tokens == 1) {
    gemv_bf16_one_token<simd::Vec8>(a);
  } else {
    gemv_rows<simd::Vec8, uint16_t>(a);
  }
}

void gemv_f32_avx2(const GemvArgs& a) {
  gemv_rows<simd::Vec8, float>(a);
}

void gemv_t_bf16_avx2(const GemvTArgs& a) {
  gemv_t_rows<simd::Vec8>(a);
}

}  // namespace ctxpar::kernels::detail
