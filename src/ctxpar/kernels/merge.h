// Exact merge of attention partials over disjoint key sets (DESIGN.md §3):
//   L = m + log Σ_i exp(lse_i − m), m = max_i lse_i;   o = Σ_i exp(lse_i − L) · o_i.
// A partial whose lse is -inf, NaN or +inf is empty: its o is never read (it may hold
// garbage). If every partial of a row is empty the row gets o = 0, lse = -inf, never NaN.
// LSEs are natural log. All tensors f32 with a contiguous last dim; other strides arbitrary.
// The overloads taking an Isa force one variant (tests, benchmarks; throw if the CPU lacks it).
#pragma once

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/tensor.h"

namespace ctxpar::kernels {

// a ← merge(a, b). out, out_b: [tokens, H, d]; lse, lse_b: [tokens, H].
void merge_attn_states(Tensor& out, Tensor& lse, const Tensor& out_b, const Tensor& lse_b);
void merge_attn_states(Tensor& out, Tensor& lse, const Tensor& out_b, const Tensor& lse_b, Isa isa);
void merge_attn_states_reference(Tensor& out, Tensor& lse, const Tensor& out_b,
                                 const Tensor& lse_b);

// The a2a plan's merge: N partials of the same rows. outs: [N, tokens, H, d];
// lses: [N, tokens, H]; out: [tokens, H, d]; lse: [tokens, H]. N == 0 gives empty rows.
void merge_partials(const Tensor& outs, const Tensor& lses, Tensor& out, Tensor& lse);
void merge_partials(const Tensor& outs, const Tensor& lses, Tensor& out, Tensor& lse, Isa isa);
void merge_partials_reference(const Tensor& outs, const Tensor& lses, Tensor& out, Tensor& lse);

// The ag_rs plan's local step. all_lses: [N, tokens, H], every rank's lse for the same rows
// (this rank's included); out: this rank's partial [tokens, H, d], scaled in place by
// exp(lse_local − L) where L is the merged lse, written to lse_merged [tokens, H]. Summing the
// rescaled partials of all ranks (the reduce-scatter) gives the merged o. An empty local
// partial or an empty L scales by 0 (o becomes 0 even if it held garbage).
void rescale_partial(Tensor& out, const Tensor& lse_local, const Tensor& all_lses,
                     Tensor& lse_merged);
void rescale_partial(Tensor& out, const Tensor& lse_local, const Tensor& all_lses,
                     Tensor& lse_merged, Isa isa);
void rescale_partial_reference(Tensor& out, const Tensor& lse_local, const Tensor& all_lses,
                               Tensor& lse_merged);

}  // namespace ctxpar::kernels
