// Internal: shape and dtype checks of the merge functions, shared by the fast and the
// reference versions so both accept exactly the same inputs.
#pragma once

#include <cstdint>

#include "ctxpar/core/tensor.h"

namespace ctxpar::kernels::detail {

struct MergeShape {
  int64_t parts = 0;  // N partials (2 for merge_attn_states)
  int64_t tokens = 0;
  int64_t heads = 0;
  int64_t dim = 0;  // o row length (0 for rescale_partial's lse-only inputs)
};

MergeShape check_merge_attn_states(const Tensor& out, const Tensor& lse, const Tensor& out_b,
                                   const Tensor& lse_b);
MergeShape check_merge_partials(const Tensor& outs, const Tensor& lses, const Tensor& out,
                                const Tensor& lse);
MergeShape check_rescale_partial(const Tensor& out, const Tensor& lse_local, const Tensor& all_lses,
                                 const Tensor& lse_merged);

}  // namespace ctxpar::kernels::detail
