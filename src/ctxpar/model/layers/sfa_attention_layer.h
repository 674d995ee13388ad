// DeepSeek-V3.2 / GLM-5 sparse attention layer: the MLA projections (MlaAttentionLayer) plus
// a Lightning Indexer per layer that picks, for every token, the index_topk keys its MLA
// attends (DESIGN.md §4 "SFA").
//
// Indexer weights (all replicated: every rank runs the whole indexer on the full sequence):
//   self_attn.indexer.wq_b.weight          [H_i·D, q_lora_rank]  index queries from the q LoRA
//                                                                activation (after q_a_layernorm)
//   self_attn.indexer.wk.weight            [D, hidden]           one index key per token
//   self_attn.indexer.k_norm.{weight,bias} [D]                   LayerNorm on the key (eps 1e-6)
//   self_attn.indexer.weights_proj.weight  [H_i, hidden]         per-head weights
// with H_i = index_n_heads, D = index_head_dim. RoPE (the model's table, YaRN included) on the
// first qk_rope_head_dim values of q and k — rope part first, as DeepSeek's reference lays them
// out: rotate-half for DeepSeek-V3.2, pairs (2i, 2i+1) like the MLA rope for GLM-5
// (IndexerConfig::interleaved_rope). weights =
// weights_proj(x)·H_i^-1/2·D^-1/2: DeepSeek's reference multiplies by n_heads^-1/2 and then by
// its softmax_scale = D^-1/2 (and a per-128-value q scale that is 1 without fp8). Its Hadamard
// rotation of q and k is orthonormal and leaves q·k unchanged in f32, so it is skipped here
// (see kernels/indexer.h for where an fp8 path would plug in).
//
// GLM-5 "shared" layers (ModelConfig::has_indexer false) have no indexer weights and no index
// key cache: they attend over the top-k of the previous full layer (set_topk_source), which ran
// earlier in the same step on the same tokens.
//
// Caches: the MLA latent (DCP-sharded) and the index keys — replicated on every rank of the
// DCP group (B·N rows per block) in the replicated indexer mode, sharded like the latent in
// the sharded mode (ModelOptions::sfa_indexer_mode). The backend pair (sparse MLA impl and
// indexer) is the one model/sfa_mode.h picks for the layer's SfaMode.
//
// DSA-CP (ModelOptions::enable_dsa_cp; DESIGN.md §4 "DSA-CP and the o_proj path"): each rank
// runs the layer for its own contiguous slice of the step's tokens (md.dsa_cp) with all
// heads — q_a, q_b, kv_a, kv_b and the indexer loaded whole, o_proj still TP-sharded:
//   1. projections and indexer activations of the slice (positions from the slice's own
//      metadata);
//   2. one all-gather of every slice's [kv_c ‖ k_pe ‖ index key] rows (padded to S rows),
//      written to the latent cache (owned slots under DCP) and the indexer cache with the
//      step's metadata: the indexer sees the whole sequence;
//   3. the slice's top-k (the sharded indexer scores every token of the step: its group
//      merge needs the same query tokens on every rank, so the slices' index queries and
//      weights are all-gathered first) and its sparse MLA (SfaDsaCpAttention /
//      SfaDsaCpDcpAttention);
//   4. o_proj: decode-only steps exchange the slices' outputs with one all-to-all in the TP
//      group ([S, all heads] → [T·S, local heads]), run the row-parallel o_proj and
//      reduce-scatter over tokens; prefill and mixed steps gather the full o_proj weight into
//      the shared FullWeightWorkspace (OutputProjection::use_full_weight, restored on exit)
//      and run it once on the slice's tokens.
// Decode tokens of a mixed step are split with the others, as vllm-ascend does: the step is
// one flat token list and only a decode-only step takes the all-to-all path.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "ctxpar/attention/lightning_indexer.h"
#include "ctxpar/attention/sfa_attention.h"
#include "ctxpar/model/layers/attention_layers.h"
#include "ctxpar/model/layers/full_weight_workspace.h"
#include "ctxpar/model/sfa_mode.h"

namespace ctxpar::model {

class SfaAttentionLayer : public MlaAttentionLayer {
 public:
  // Throws if the config has no q LoRA (q_lora_rank 0): the indexer's queries come from it,
  // or if (T, N, enable_dsa_cp) is not a valid SfaMode.
  SfaAttentionLayer(const ModelContext& ctx, const ModelConfig& config, int64_t layer,
                    std::shared_ptr<const kernels::RopeCache> rope);

  kv::KvCacheSpec kv_cache_spec() const override;                // the latent, as MLA
  std::vector<kv::KvCacheSpec> kv_cache_specs() const override;  // {latent, index keys}
  void bind_cache(Tensor cache) override;                        // throws: needs both caches
  void bind_caches(std::vector<Tensor> caches) override;
  Tensor forward(const attention::AttentionMetadata& md, const Tensor& x) override;
  Tensor forward_sharded(const attention::AttentionMetadata& md, const SequenceShard& sp,
                         const Tensor& x_local) override;

  SfaMode mode() const { return mode_; }
  // Whether this layer runs its own indexer ("full"), or reuses another's top-k ("shared").
  bool has_indexer() const { return indexer_weights_.has_value(); }
  // Shared layers: the full layer whose last_selection() this one attends over. Must be set
  // (to an earlier layer of the same model) before the first forward.
  void set_topk_source(const SfaAttentionLayer* full_layer);
  // The selection of the last forward() ([tokens, index_topk] i32 global positions), for
  // tests and tools: every token's, or under DSA-CP the rows of this rank's slice.
  const Tensor& last_selection() const { return last_selection_; }

 protected:
  Tensor forward_partial(const attention::AttentionMetadata& md, const Tensor& x) override;

 private:
  // Index queries [tokens, H_i, D] (roped), keys [tokens, D] (normed, roped) and weights
  // [tokens, H_i] (scaled) of x [tokens, hidden] at md's positions.
  struct IndexerInputs {
    Tensor q, k, weights;
  };
  IndexerInputs indexer_inputs(const attention::AttentionMetadata& md, const Tensor& x,
                               const Tensor& q_lora) const;
  // The top-k of a shared layer: its source's selection of this step.
  const Tensor& shared_selection() const;
  // DSA-CP: this rank's slice x_local [S, hidden] (normed; padding rows ignored) → its rows of
  // the layer's summed output, [S, hidden].
  Tensor forward_slice(const attention::AttentionMetadata& md, const Tensor& x_local);
  // DSA-CP o_proj of the slice's attention output attn [S, H·v] (padding rows zero).
  Tensor project_slice(const attention::AttentionMetadata& md, const Tensor& attn);

  // A full layer's indexer weights (all replicated).
  struct IndexerWeights {
    ColumnParallelLinear q;   // wq_b: [H_i·D, q_lora_rank]
    ColumnParallelLinear kw;  // wk then weights_proj: [D + H_i, hidden]
    Tensor k_norm_weight, k_norm_bias;
  };

  SfaMode mode_;
  attention::IndexerDims indexer_dims_;
  kernels::RopeStyle indexer_rope_;
  float weights_scale_;                             // H_i^-1/2 · D^-1/2
  std::optional<IndexerWeights> indexer_weights_;   // full layers only
  const SfaAttentionLayer* topk_source_ = nullptr;  // shared layers only
  std::unique_ptr<attention::LightningIndexer> indexer_;
  std::unique_ptr<attention::SfaAttention> sfa_;
  Tensor last_selection_;
  FullWeightWorkspace* full_weights_;  // ctx.full_weights, or own below
  std::unique_ptr<FullWeightWorkspace> own_full_weights_;
};

}  // namespace ctxpar::model
