// Internal: the per-row pieces of the partial merge, shared by merge.cc and by the split-K
// step of the attention kernels (so chunk partials merge by the same code as rank partials).
#pragma once

#include <cstdint>

#include "ctxpar/core/cpu_features.h"

namespace ctxpar::kernels::detail {

// Merge weights of one row of n partials (natural-log lse[i]): w[i] = exp(lse[i] − L), 0 for
// an empty partial (lse -inf, NaN or +inf). Returns L = log Σ exp(lse[i]) over the non-empty
// ones, or -inf if all are empty. Computed in double: it is per row, not per element.
float merge_weights(int n, const float* lse, float* w);

// Vector loops of the merge, one set per ISA.
struct MergeKernels {
  // out[0, d) = Σ_i w[i]·o[i][0, d) over n partials (n may be 0: out = 0). out may alias any
  // o[i]: each element is read from every input before it is written.
  void (*weighted_sum)(int n, const float* const* o, const float* w, int64_t d, float* out);
  // o[0, d) *= s; s == 0 writes zeros (so garbage in an empty partial cannot leak as NaN).
  void (*scale)(float* o, int64_t d, float s);
};

const MergeKernels& merge_kernels(Isa isa);

// Per-ISA tables, defined in merge_kernel_{scalar,avx2,avx512}.cc.
extern const MergeKernels kMergeKernelsScalar;
extern const MergeKernels kMergeKernelsAvx2;
extern const MergeKernels kMergeKernelsAvx512;

}  // namespace ctxpar::kernels::detail
