// Baseline x86-64 variant of the merge loops.
#include "ctxpar/kernels/merge_kernel_impl.h"
#include "ctxpar/kernels/simd_scalar.h"

namespace ctxpar::kernels::detail {

const MergeKernels kMergeKernelsScalar = make_merge_kernels<simd::Vec1>();

}  // namespace ctxpar::kernels::detail
