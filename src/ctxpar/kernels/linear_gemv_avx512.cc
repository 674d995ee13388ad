// AVX-512 variant of the decode GEMV: the shared template over simd::Vec16.
#include "ctxpar/kernels/linear_gemv_impl.h"
#include "ctxpar/kernels/simd_avx512.h"

namespace ctxpar::kernels::detail {

void gemv_bf16_avx512(const GemvArgs& a) {
  if (a.tokens == 1) {
    gemv_bf16_one_token<simd::Vec16>(a);
  } else {
    gemv_rows<simd::Vec16, uint16_t>(a);
  }
}

void gemv_f32_avx512(const GemvArgs& a) {
  gemv_rows<simd::Vec16, float>(a);
}

void gemv_t_bf16_avx512(const GemvTArgs& a) {
  gemv_t_rows<simd::Vec16>(a);
}

}  // namespace ctxpar::kernels::detail
