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
// with H_i = index_n_heads, D = index_head_dim. Rotate-half RoPE (the model's table, YaRN
// included) on the first qk_rope_head_dim values of q and k — rope part first, as DeepSeek's
// reference lays them out, and not interleaved like the MLA rope. weights =
// weights_proj(x)·H_i^-1/2·D^-1/2: DeepSeek's reference multiplies by n_heads^-1/2 and then by
// its softmax_scale = D^-1/2 (and a per-128-value q scale that is 1 without fp8). Its Hadamard
// rotation of q and k is orthonormal and leaves q·k unchanged in f32, so it is skipped here
// (see kernels/indexer.h for where an fp8 path would plug in).
//
// Caches: the MLA latent (DCP-sharded) and the index keys — replicated on every rank of the
// DCP group (B·N rows per block) in the replicated indexer mode, sharded like the latent in
// the sharded mode (ModelOptions::sfa_indexer_mode). Under DCP (N > 1, which needs N == T)
// the backend is SfaDcpAttention.
#pragma once

#include <memory>
#include <vector>

#include "ctxpar/attention/lightning_indexer.h"
#include "ctxpar/attention/sfa_attention.h"
#include "ctxpar/model/layers/attention_layers.h"

namespace ctxpar::model {

class SfaAttentionLayer : public MlaAttentionLayer {
 public:
  // Throws if the config has no q LoRA (q_lora_rank 0): the indexer's queries come from it.
  SfaAttentionLayer(const ModelContext& ctx, const ModelConfig& config, int64_t layer,
                    std::shared_ptr<const kernels::RopeCache> rope);

  kv::KvCacheSpec kv_cache_spec() const override;                // the latent, as MLA
  std::vector<kv::KvCacheSpec> kv_cache_specs() const override;  // {latent, index keys}
  void bind_cache(Tensor cache) override;                        // throws: needs both caches
  void bind_caches(std::vector<Tensor> caches) override;
  Tensor forward(const attention::AttentionMetadata& md, const Tensor& x) override;

  // The selection of the last forward() ([tokens, index_topk] i32 global positions), for
  // tests and tools.
  const Tensor& last_selection() const { return last_selection_; }

 private:
  attention::IndexerDims indexer_dims_;
  float weights_scale_;            // H_i^-1/2 · D^-1/2
  ColumnParallelLinear index_q_;   // wq_b, replicated: [H_i·D, q_lora_rank]
  ColumnParallelLinear index_kw_;  // wk then weights_proj, replicated: [D + H_i, hidden]
  Tensor k_norm_weight_, k_norm_bias_;
  std::unique_ptr<attention::LightningIndexer> indexer_;
  std::unique_ptr<attention::SfaAttention> sfa_;
  Tensor last_selection_;
};

}  // namespace ctxpar::model
