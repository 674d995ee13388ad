// AVX2 + FMA variant of the merge loops.
#include "ctxpar/kernels/merge_kernel_impl.h"
#include "ctxpar/kernels/simd_avx2.h"

namespace ctxpar::kernels::detail {

const MergeKernels kMergeKernelsAvx2 = make_merge_kernels<simd::Vec8>();

}  // namespace ctxpar::kernels::detail
