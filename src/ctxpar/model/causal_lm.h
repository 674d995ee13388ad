// A decoder-only causal LM on one rank (Llama, Qwen2/3, Qwen3-MoE, DeepSeek V2/V3/V3.2, GLM-5):
// vocab-parallel embedding, decoder layers (pre-norm attention + dense MLP or MoE), final norm
// and a vocab-parallel LM head. Every rank of the TP group runs it on its weight shard (SPMD).
//
// Life cycle: construct (loads this rank's weights), ask kv_cache_specs(), allocate_kv_cache()
// with the block count the engine planned, then forward() once per step.
//
// With ModelOptions::sequence_parallel (flashcomm1) the residual stream between layers is
// split over the TP group by tokens (SequenceShard): the embedding and every row-parallel
// layer reduce-scatter instead of all-reducing, every column-parallel layer all-gathers its
// input, and the final rows are gathered before the LM head. The outputs are the same sums
// in the same order as without it.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "ctxpar/attention/attention_metadata.h"
#include "ctxpar/kv/kv_cache_spec.h"
#include "ctxpar/model/layers/attention_layers.h"
#include "ctxpar/model/layers/full_weight_workspace.h"
#include "ctxpar/model/layers/mlp.h"
#include "ctxpar/model/layers/moe.h"
#include "ctxpar/model/layers/vocab_parallel.h"
#include "ctxpar/model/model_config.h"

namespace ctxpar::model {

class DecoderLayer {
 public:
  DecoderLayer(const ModelContext& ctx, const ModelConfig& config, int64_t layer,
               const std::shared_ptr<const kernels::RopeCache>& rope);
  // residual [tokens, hidden] is updated in place (h = x + attn(norm(x)); x = h + mlp(norm(h))).
  void forward(const attention::AttentionMetadata& md, Tensor& residual);
  // The same with residual holding this rank's sequence-parallel rows, [S, hidden].
  void forward_sharded(const attention::AttentionMetadata& md, const SequenceShard& sp,
                       Tensor& residual);
  AttentionLayer& attention() { return *attention_; }

 private:
  // This rank's partial MLP / MoE output of x [tokens, hidden], before the TP sum.
  Tensor mlp_partial(const Tensor& x) const;

  float eps_;
  Tensor input_norm_;  // [hidden] f32
  Tensor post_attention_norm_;
  std::unique_ptr<AttentionLayer> attention_;
  std::unique_ptr<GatedMlp> mlp_;  // dense layers
  std::unique_ptr<MoeLayer> moe_;  // MoE layers
};

class CausalLM {
 public:
  // Validates the config against (T, N) first (before any weight is read), then loads.
  CausalLM(const ModelConfig& config, const ModelContext& ctx);

  const ModelConfig& config() const { return config_; }
  // One spec per cache on this rank, layer by layer (a sparse-attention layer has two: the
  // DCP-sharded latent and the indexer keys, replicated or sharded by the indexer mode).
  std::vector<kv::KvCacheSpec> kv_cache_specs() const;
  // Allocates every layer's cache with num_blocks blocks (this rank's shard) and binds it.
  void allocate_kv_cache(int32_t num_blocks);
  // Bytes of KV cache this rank allocated.
  int64_t kv_cache_bytes() const { return kv_cache_bytes_; }
  // Every cache allocate_kv_cache made, layer by layer (their storage, not copies).
  std::span<Tensor> kv_caches() { return kv_caches_; }

  // token_ids [tokens] i32 of the step (positions and requests in md); logits_indices [n] i64
  // selects the tokens whose next-token logits are returned: [n, vocab] f32, on every rank.
  Tensor forward(const attention::AttentionMetadata& md, const Tensor& token_ids,
                 const Tensor& logits_indices);

  int64_t num_layers() const { return static_cast<int64_t>(layers_.size()); }
  DecoderLayer& layer(int64_t i) { return *layers_.at(static_cast<size_t>(i)); }
  // The full-weight buffers the layers share (DSA-CP's o_proj gathers).
  const FullWeightWorkspace& full_weight_workspace() const { return *full_weights_; }

 private:
  ModelConfig config_;
  std::unique_ptr<FullWeightWorkspace> full_weights_;
  ModelContext ctx_;  // the caller's, with full_weights pointing at full_weights_
  VocabParallelEmbedding embed_;
  std::vector<std::unique_ptr<DecoderLayer>> layers_;
  Tensor final_norm_;
  std::unique_ptr<ParallelLmHead> lm_head_;
  std::vector<Tensor> kv_caches_;
  int64_t kv_cache_bytes_ = 0;
};

}  // namespace ctxpar::model
