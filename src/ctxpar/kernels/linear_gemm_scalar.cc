// Scalar variant of the prefill GEMM: the shared template over simd::Vec1 (6 tokens × 2
// columns per tile), the reference of the blocking for the tests.
#include "ctxpar/kernels/linear_gemm_impl.h"
#include "ctxpar/kernels/simd_scalar.h"

namespace ctxpar::kernels::detail {

void gemm_scalar(const GemmArgs& a) {
  gemm_rows<simd::Vec1>(a);
}

}  // namespace ctxpar::kernels::detail
