// Scalar variant of the FP8 loops: weights through the exact 256-entry table.
#include "ctxpar/kernels/linear_fp8_kernel_impl.h"
#include "ctxpar/kernels/simd_scalar.h"

namespace ctxpar::kernels::detail {
namespace {

struct TableLoad {
  static constexpr float kFactor = 1.0f;
  static simd::Vec1 load(const uint8_t* p) { return {e4m3_table()[*p]}; }
};

}  // namespace

const Fp8Kernels kFp8KernelsScalar =
    make_fp8_kernels<simd::Vec1, NaturalOrder<simd::Vec1, TableLoad>, 4, 4, 4>();

}  // namespace ctxpar::kernels::detail
