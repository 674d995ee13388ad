// The KV caches a model needs per rank, from its config alone (no weights): what `ctxpar plan`
// and the engine's capacity planning use. CausalLM::kv_cache_specs() must agree with it.
#pragma once

#include <vector>

#include "ctxpar/attention/sfa_indexer_mode.h"
#include "ctxpar/kv/kv_cache_spec.h"
#include "ctxpar/model/model_config.h"

namespace ctxpar::model {

// One spec per cache per layer on one rank of a TP group of tp_size: GQA (K and V of the
// rank's KV heads), MLA (the latent row), and for the full layers of sparse models also the
// indexer keys — replicated on every rank of the DCP group, or sharded like the latent in the
// sharded indexer mode (when dcp_size > 1). GLM-5's shared layers keep no index keys.
std::vector<kv::KvCacheSpec> kv_cache_specs_for(
    const ModelConfig& config, int tp_size, int dcp_size, DType kv_cache_dtype,
    attention::SfaIndexerMode indexer_mode = attention::SfaIndexerMode::kReplicated);

}  // namespace ctxpar::model
