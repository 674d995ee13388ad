// AVX-512 variant (runs only where the CPU has AVX-512) of silu_and_mul's row loop.
#include "ctxpar/kernels/activation_kernel.h"
#include "ctxpar/kernels/activation_kernel_impl.h"
#include "ctxpar/kernels/simd_avx512.h"

namespace ctxpar::kernels::detail {

const SiluMulFn kSiluMulAvx512 = silu_mul_row<simd::Vec16>;

}  // namespace ctxpar::kernels::detail
