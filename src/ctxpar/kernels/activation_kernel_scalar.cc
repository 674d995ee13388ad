// Baseline x86-64 variant of silu_and_mul's row loop.
#include "ctxpar/kernels/activation_kernel.h"
#include "ctxpar/kernels/activation_kernel_impl.h"
#include "ctxpar/kernels/simd_scalar.h"

namespace ctxpar::kernels::detail {

const SiluMulFn kSiluMulScalar = silu_mul_row<simd::Vec1>;

}  // namespace ctxpar::kernels::detail
