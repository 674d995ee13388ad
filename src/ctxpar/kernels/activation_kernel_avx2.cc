// AVX2 variant (runs only where the CPU has AVX2 and FMA) of silu_and_mul's row loop.
#include "ctxpar/kernels/activation_kernel.h"
#include "ctxpar/kernels/activation_kernel_impl.h"
#include "ctxpar/kernels/simd_avx2.h"

namespace ctxpar::kernels::detail {

const SiluMulFn kSiluMulAvx2 = silu_mul_row<simd::Vec8>;

}  // namespace ctxpar::kernels::detail
