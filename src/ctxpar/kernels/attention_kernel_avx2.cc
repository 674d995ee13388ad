// AVX2 + FMA variant of the attention job: the shared template over 8-lane vectors.
#include "ctxpar/kernels/attention_kernel_impl.h"
#include "ctxpar/kernels/simd_avx2.h"

namespace ctxpar::kernels::detail {

void run_attention_job_avx2(const AttnJob& job, float* scratch) {
  run_job_for_isa<simd::Vec8>(job, scratch);
}

}  // namespace ctxpar::kernels::detail
