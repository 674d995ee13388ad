// The one place that decides how a model's attention runs over its ranks, from the model
// config, T, N and the options (DESIGN.md §4 "SFA" and "DSA-CP"), and that builds the
// matching metadata builder and sparse-attention impl pair.
//
// Sparse-attention (SFA) models run in one of four modes:
//
//   mode        N      DSA-CP  who attends what                latent cache    metadata / impl
//   native      1      off     all tokens, heads split by TP   full per rank   normal /
//   SfaAttention DSA-CP      1      on      own token slice, all heads      full per rank   +slice
//   / SfaDsaCpAttention SFA-DCP     N = T  off     all tokens, heads split by TP   sharded by DCP
//   DCP / SfaDcpAttention DSA-CP+DCP  N = T  on      own token slice, all heads      sharded by DCP
//   DCP+slice / SfaDsaCpDcpAttention
//
// Under DSA-CP the attention projections (q_a, q_b, kv_a, kv_b) and the indexer are
// replicated — every rank loads them whole — and o_proj stays TP-sharded. The typical
// deployment is T = N, I = B (one DCP group per TP group, whole blocks per rank); any I
// works. Other models (GQA, dense MLA) ignore the SFA mode; their metadata builder is the
// normal one or the DCP one.
#pragma once

#include <memory>
#include <string_view>

#include "ctxpar/attention/attention_metadata.h"
#include "ctxpar/attention/lightning_indexer.h"
#include "ctxpar/attention/sfa_attention.h"
#include "ctxpar/model/layers/model_context.h"
#include "ctxpar/model/model_config.h"

namespace ctxpar::model {

enum class SfaMode { kNative, kDsaCp, kSfaDcp, kDsaCpDcp };

std::string_view sfa_mode_name(SfaMode mode);  // "native", "DSA-CP", "SFA-DCP", "DSA-CP+DCP"
inline bool splits_tokens(SfaMode mode) {
  return mode == SfaMode::kDsaCp || mode == SfaMode::kDsaCpDcp;
}

// The mode of a sparse model; throws ctxpar::Error naming the rule for impossible
// combinations: enable_dsa_cp on a model without sparse attention, N > 1 with N != T for a
// sparse model, N not dividing T. A non-sparse model with DSA-CP off gets kNative.
SfaMode resolve_sfa_mode(const ModelConfig& config, int tp, int dcp, bool enable_dsa_cp);

// Start-up check of every parallel and numeric option against the model and (T, N), before
// any weight is read: validate_for_parallel, the SFA mode, the o_proj format (bf16 or int8
// needs an MLA-family model, whose o_proj is OutputProjection). Throws with the rule.
void validate_model_options(const ModelConfig& config, int tp, int dcp,
                            const ModelOptions& options);

// The step's metadata builder for this rank: normal or DCP (N > 1), wrapped by the DSA-CP
// slice mixin when the mode splits tokens.
std::unique_ptr<attention::AttentionMetadataBuilder> make_metadata_builder(
    const ModelConfig& config, const ModelContext& ctx);

// The sparse MLA impl and the Lightning Indexer of one layer for the mode (dims.num_heads:
// the heads this rank attends — all of them when the mode splits tokens).
std::unique_ptr<attention::SfaAttention> make_sfa_attention(SfaMode mode,
                                                            const attention::MlaDims& dims,
                                                            Tensor latent_cache, Tensor kv_b_proj,
                                                            const ModelContext& ctx);
std::unique_ptr<attention::LightningIndexer> make_lightning_indexer(
    SfaMode mode, const attention::IndexerDims& dims, Tensor key_cache, const ModelContext& ctx);

}  // namespace ctxpar::model
