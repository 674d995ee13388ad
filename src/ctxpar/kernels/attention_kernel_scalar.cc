// Baseline x86-64 variant of the attention job: the shared template over one-lane vectors.
#include "ctxpar/kernels/attention_kernel_impl.h"
#include "ctxpar/kernels/simd_scalar.h"

namespace ctxpar::kernels::detail {

void run_attention_job_scalar(const AttnJob& job, float* scratch) {
  run_job_for_isa<simd::Vec1>(job, scratch);
}

}  // namespace ctxpar::kernels::detail
