// AVX-512 variant of the attention job: the shared template over 16-lane vectors. Runs only
// where the CPU has AVX-512 (the dispatcher checks).
#include "ctxpar/kernels/attention_kernel_impl.h"
#include "ctxpar/kernels/simd_avx512.h"

namespace ctxpar::kernels::detail {

void run_attention_job_avx512(const AttnJob& job, float* scratch) {
  run_job_for_isa<simd::Vec16>(job, scratch);
}

}  // namespace ctxpar::kernels::detail
