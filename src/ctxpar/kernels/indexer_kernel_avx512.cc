// AVX-512 variant of the indexer score loop.
#include "ctxpar/kernels/indexer_kernel_impl.h"
#include "ctxpar/kernels/simd_avx512.h"

namespace ctxpar::kernels::detail {

const IndexerKernels kIndexerKernelsAvx512 = make_indexer_kernels<simd::Vec16>();

}  // namespace ctxpar::kernels::detail
