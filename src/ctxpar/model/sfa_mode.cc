#include "ctxpar/model/sfa_mode.h"

#include "ctxpar/attention/context_parallel/dcp_metadata_builder.h"
#include "ctxpar/attention/context_parallel/dsa_cp_metadata_builder.h"
#include "ctxpar/attention/context_parallel/sfa_dcp_attention.h"
#include "ctxpar/attention/context_parallel/sfa_dsa_cp_attention.h"
#include "ctxpar/attention/context_parallel/sharded_lightning_indexer.h"
#include "ctxpar/core/error.h"
#include "ctxpar/model/parallel_validation.h"

namespace ctxpar::model {

std::string_view sfa_mode_name(SfaMode mode) {
  switch (mode) {
    case SfaMode::kNative:
      return "native";
    case SfaMode::kDsaCp:
      return "DSA-CP";
    case SfaMode::kSfaDcp:
      return "SFA-DCP";
    case SfaMode::kDsaCpDcp:
      return "DSA-CP+DCP";
  }
  return "?";
}

SfaMode resolve_sfa_mode(const ModelConfig& c, int tp, int dcp, bool enable_dsa_cp) {
  CTXPAR_CHECK_INPUT(
      tp >= 1 && dcp >= 1 && tp % dcp == 0,
      "decode-context-parallel size N={} must be >= 1 and divide tensor-parallel size "
      "T={}",
      dcp, tp);
  CTXPAR_CHECK_INPUT(
      !enable_dsa_cp || c.is_sparse(),
      "{}: --additional-config enable_dsa_cp splits a sparse-attention (DSA: Lightning "
      "Indexer + SFA) model's tokens over the TP group, but this {} model has no "
      "indexer (index_n_heads = 0); drop enable_dsa_cp",
      c.source, arch_name(c.arch));
  if (!c.is_sparse()) return SfaMode::kNative;
  CTXPAR_CHECK_INPUT(
      dcp == 1 || dcp == tp,
      "{}: sparse attention with DCP needs N == T (the replicated indexer, and DSA-CP's "
      "token slices, span the whole TP group); got N={} T={} (use N=1 or N={})",
      c.source, dcp, tp, tp);
  if (dcp > 1) return enable_dsa_cp ? SfaMode::kDsaCpDcp : SfaMode::kSfaDcp;
  return enable_dsa_cp ? SfaMode::kDsaCp : SfaMode::kNative;
}

void validate_model_options(const ModelConfig& c, int tp, int dcp, const ModelOptions& o) {
  validate_for_parallel(c, tp, dcp);
  resolve_sfa_mode(c, tp, dcp, o.enable_dsa_cp);
  CTXPAR_CHECK_INPUT(o.o_proj_quant == OProjQuant::kNone || c.is_mla(),
                     "{}: --additional-config o_proj_quant (bf16, int8) sets how the MLA-family "
                     "(DeepSeek) o_proj is stored; this {} model's attention is not MLA",
                     c.source, arch_name(c.arch));
}

std::unique_ptr<attention::AttentionMetadataBuilder> make_metadata_builder(
    const ModelConfig& config, const ModelContext& ctx) {
  const ModelOptions& o = ctx.options;
  const SfaMode mode = resolve_sfa_mode(config, ctx.tp_size(), ctx.dcp_size(), o.enable_dsa_cp);
  const kv::DcpLayout layout(ctx.dcp_size(), o.block_size, o.interleave);
  const int tp_rank = ctx.tp_rank(), tp = ctx.tp_size();
  using attention::AttentionMetadataBuilder;
  using attention::DcpMetadataBuilder;
  using attention::DsaCpBuilderMixin;
  if (ctx.dcp_size() > 1) {
    if (splits_tokens(mode)) {
      return std::make_unique<DsaCpBuilderMixin<DcpMetadataBuilder>>(tp_rank, tp, layout,
                                                                     ctx.groups.dcp_rank());
    }
    return std::make_unique<DcpMetadataBuilder>(layout, ctx.groups.dcp_rank());
  }
  if (splits_tokens(mode)) {
    return std::make_unique<DsaCpBuilderMixin<AttentionMetadataBuilder>>(tp_rank, tp, o.block_size);
  }
  return std::make_unique<AttentionMetadataBuilder>(o.block_size);
}

std::unique_ptr<attention::SfaAttention> make_sfa_attention(SfaMode mode,
                                                            const attention::MlaDims& dims,
                                                            Tensor latent, Tensor kv_b,
                                                            const ModelContext& ctx) {
  switch (mode) {
    case SfaMode::kNative:
      return std::make_unique<attention::SfaAttention>(dims, latent, kv_b, ctx.pool);
    case SfaMode::kDsaCp:
      return std::make_unique<attention::SfaDsaCpAttention>(dims, latent, kv_b, ctx.pool);
    case SfaMode::kSfaDcp:
      return std::make_unique<attention::SfaDcpAttention>(dims, latent, kv_b, ctx.pool,
                                                          ctx.groups.dcp(), ctx.options.comm_plan);
    case SfaMode::kDsaCpDcp:
      return std::make_unique<attention::SfaDsaCpDcpAttention>(
          dims, latent, kv_b, ctx.pool, ctx.groups.dcp(), ctx.options.comm_plan);
  }
  CTXPAR_FAIL("unknown SFA mode {}", static_cast<int>(mode));
}

std::unique_ptr<attention::LightningIndexer> make_lightning_indexer(
    SfaMode mode, const attention::IndexerDims& dims, Tensor key_cache, const ModelContext& ctx) {
  // Without DCP the indexer keeps every token's key on every rank whatever the indexer mode.
  const bool sharded = (mode == SfaMode::kSfaDcp || mode == SfaMode::kDsaCpDcp) &&
                       ctx.options.sfa_indexer_mode == attention::SfaIndexerMode::kSharded;
  if (sharded) {
    return std::make_unique<attention::ShardedLightningIndexer>(dims, key_cache, ctx.pool,
                                                                ctx.groups.dcp());
  }
  return std::make_unique<attention::LightningIndexer>(dims, key_cache, ctx.pool);
}

}  // namespace ctxpar::model
