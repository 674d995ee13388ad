// AVX-512 variant of the merge loops (runs only where the CPU has AVX-512).
#include "ctxpar/kernels/merge_kernel_impl.h"
#include "ctxpar/kernels/simd_avx512.h"

namespace ctxpar::kernels::detail {

const MergeKernels kMergeKernelsAvx512 = make_merge_kernels<simd::Vec16>();

}  // namespace ctxpar::kernels::detail
