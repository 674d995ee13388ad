// Internal: the vector loop of silu_and_mul (activation.h), one per ISA
// (activation_kernel_{scalar,avx2,avx512}.cc), chosen at run time like the merge loops.
#pragma once

#include <cstdint>

#include "ctxpar/core/cpu_features.h"

namespace ctxpar::kernels::detail {

// out[i] = silu(gate[i]) · up[i] for i < n, f32; out may be gate (in place).
using SiluMulFn = void (*)(const float* gate, const float* up, int64_t n, float* out);

// Throws ctxpar::Error if the CPU lacks isa (an explicit request for a variant the CPU has is
// honoured, which is how tests cover every variant).
SiluMulFn silu_mul_kernel(Isa isa);

extern const SiluMulFn kSiluMulScalar;
extern const SiluMulFn kSiluMulAvx2;
extern const SiluMulFn kSiluMulAvx512;

}  // namespace ctxpar::kernels::detail
