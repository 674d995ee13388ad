// Baseline x86-64 variant of the indexer score loop.
#include "ctxpar/kernels/indexer_kernel_impl.h"
#include "ctxpar/kernels/simd_scalar.h"

namespace ctxpar::kernels::detail {

const IndexerKernels kIndexerKernelsScalar = make_indexer_kernels<simd::Vec1>();

}  // namespace ctxpar::kernels::detail
