// AVX2 + FMA variant of the prefill GEMM: the shared template over simd::Vec8 (6 tokens ×
// 16 columns per tile).
#include "ctxpar/kernels/linear_gemm_impl.h"
#include "ctxpar/kernels/simd_avx2.h"

namespace ctxpar::kernels::detail {

void gemm_avx2(const GemmArgs& a) {
  gemm_rows<simd::Vec8>(a);
}

}  // namespace ctxpar::kernels::detail
