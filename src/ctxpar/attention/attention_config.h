// Start-up validation of how an attention type may be split over TP and DCP ranks
// (DESIGN.md §4). Called before any weight is loaded; errors name the numbers and the rule.
#pragma once

#include <cstdint>

namespace ctxpar::attention {

// GQA/MHA: num_heads % T == 0; KV heads either split (num_kv_heads % T == 0) or replicated
// (T % num_kv_heads == 0). With N > 1 every DCP group must lie inside the ranks of one
// replicated KV head: num_kv_heads divides T and N divides T / num_kv_heads.
void validate_gqa_parallel(int64_t num_heads, int64_t num_kv_heads, int tp, int dcp);

// MLA: num_heads % T == 0 and N divides T (the latent is one head replicated over TP).
void validate_mla_parallel(int64_t num_heads, int tp, int dcp);

// Common: T >= 1, N >= 1, N divides T.
void validate_dcp_sizes(int tp, int dcp);

}  // namespace ctxpar::attention
