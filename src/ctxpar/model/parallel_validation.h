// Whether a model can run with a given tensor-parallel size T and decode-context-parallel
// size N (DESIGN.md §1, §4). Kept apart from config parsing: a config is valid on its own,
// and only some (T, N) pairs fit it.
#pragma once

#include <cstdint>

#include "ctxpar/model/model_config.h"

namespace ctxpar::model {

// Throws Error naming the numbers and the rule broken, when:
// - T < 1, N < 1, or N does not divide T;
// - T does not divide num_attention_heads (every rank holds whole heads);
// - GQA: num_key_value_heads >= T and T does not divide it, or num_key_value_heads < T and
//   it does not divide T; and for N > 1: num_key_value_heads must divide T and N must divide
//   T / num_key_value_heads (every DCP group shares one replicated KV head set);
// - sparse attention (V3.2) with N > 1 and N != T (replicated indexer mode);
// - T does not divide intermediate_size, or moe_intermediate_size for MoE models.
// MLA caches one latent replicated over TP, so any N dividing T is fine.
void validate_for_parallel(const ModelConfig& config, int64_t tp_size, int64_t dcp_size);

}  // namespace ctxpar::model
