// AVX2 + FMA variant of the indexer score loop.
#include "ctxpar/kernels/indexer_kernel_impl.h"
#include "ctxpar/kernels/simd_avx2.h"

namespace ctxpar::kernels::detail {

const IndexerKernels kIndexerKernelsAvx2 = make_indexer_kernels<simd::Vec8>();

}  // namespace ctxpar::kernels::detail
