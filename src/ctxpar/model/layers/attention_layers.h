// Self-attention layers of the supported architectures: projections, RoPE and o_proj around
// an attention backend (attention/), which is the DCP variant when the DCP size is > 1.
// The backend is created when the KV cache is bound (bind_cache), since it views the cache.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ctxpar/attention/gqa_attention.h"
#include "ctxpar/attention/mla_attention.h"
#include "ctxpar/kernels/rope.h"
#include "ctxpar/kv/kv_cache_spec.h"
#include "ctxpar/model/layers/output_projection.h"
#include "ctxpar/model/layers/parallel_linear.h"
#include "ctxpar/model/layers/sequence_parallel.h"
#include "ctxpar/model/model_config.h"

namespace ctxpar::model {

// RoPE scaling of a config, in the kernel's terms.
kernels::RopeScaling rope_scaling_of(const RopeConfig& rope);

// The model's cos/sin table (rotary dim: head_dim for GQA, qk_rope_head_dim for MLA), built
// once per model and shared by its layers: at DeepSeek's 163840 positions it is ~42 MB.
std::shared_ptr<const kernels::RopeCache> make_rope_cache(const ModelConfig& config);

class AttentionLayer {
 public:
  virtual ~AttentionLayer() = default;
  // This layer's KV cache on one rank.
  virtual kv::KvCacheSpec kv_cache_spec() const = 0;
  // cache: [num_blocks, B, row...] shaped by kv_cache_spec(); the layer views it.
  virtual void bind_cache(Tensor cache) = 0;
  // Every cache the layer keeps on one rank, in bind order: one for GQA and MLA; the latent
  // and the indexer keys for sparse MLA. Capacity planning sums them per block.
  virtual std::vector<kv::KvCacheSpec> kv_cache_specs() const { return {kv_cache_spec()}; }
  // caches[i]: [num_blocks, kv_cache_specs()[i].rows_per_block(layout), row...].
  virtual void bind_caches(std::vector<Tensor> caches) { bind_cache(std::move(caches.at(0))); }
  // x [tokens, hidden] (normed) → [tokens, hidden], all-reduced over TP.
  virtual Tensor forward(const attention::AttentionMetadata& md, const Tensor& x) = 0;
  // Sequence-parallel form (flashcomm1): x_local [S, hidden] holds this rank's rows of the
  // step's normed tokens (sp); returns this rank's rows of the summed output, [S, hidden].
  // By default: all-gather the rows, forward_partial, reduce-scatter over tokens.
  virtual Tensor forward_sharded(const attention::AttentionMetadata& md, const SequenceShard& sp,
                                 const Tensor& x_local);

 protected:
  // x [tokens, hidden] → this rank's o_proj output before the TP sum, [tokens, hidden].
  virtual Tensor forward_partial(const attention::AttentionMetadata& md, const Tensor& x) = 0;
};

// Llama / Qwen2 / Qwen3: q, k, v (fused, with KV heads split or replicated over TP), for Qwen3
// an RMSNorm over head_dim on every q and k head (self_attn.{q,k}_norm.weight [head_dim],
// eps rms_norm_eps), then rotate-half RoPE.
class GqaAttentionLayer : public AttentionLayer {
 public:
  GqaAttentionLayer(const ModelContext& ctx, const ModelConfig& config, int64_t layer,
                    std::shared_ptr<const kernels::RopeCache> rope);
  kv::KvCacheSpec kv_cache_spec() const override;
  void bind_cache(Tensor cache) override;
  Tensor forward(const attention::AttentionMetadata& md, const Tensor& x) override;

 protected:
  Tensor forward_partial(const attention::AttentionMetadata& md, const Tensor& x) override;

 private:
  ModelContext ctx_;
  int64_t num_kv_heads_;     // the model's, before TP
  attention::GqaDims dims_;  // per rank
  ColumnParallelLinear qkv_;
  RowParallelLinear o_proj_;
  float qk_norm_eps_;
  Tensor q_norm_, k_norm_;  // [head_dim] f32 (Qwen3), undefined otherwise
  std::shared_ptr<const kernels::RopeCache> rope_;
  std::unique_ptr<attention::GqaAttention> impl_;
};

// DeepSeek V2/V3 MLA: q (direct or through the q LoRA), the latent kv_a (replicated), interleaved
// RoPE on the rope parts, kv_b_proj sliced per rank for the absorbed and expanded forms, and
// o_proj (OutputProjection: row-parallel, f32 / bf16 or int8).
class MlaAttentionLayer : public AttentionLayer {
 public:
  MlaAttentionLayer(const ModelContext& ctx, const ModelConfig& config, int64_t layer,
                    std::shared_ptr<const kernels::RopeCache> rope);
  kv::KvCacheSpec kv_cache_spec() const override;
  void bind_cache(Tensor cache) override;
  Tensor forward(const attention::AttentionMetadata& md, const Tensor& x) override;

  const OutputProjection& o_proj() const { return o_proj_; }

 protected:
  // Which heads a rank computes: its H / T (the TP split), or all H (DSA-CP, where ranks
  // split the tokens instead: q_b_proj and kv_b_proj are then loaded whole).
  enum class Heads { kTensorParallel, kAll };
  MlaAttentionLayer(const ModelContext& ctx, const ModelConfig& config, int64_t layer,
                    std::shared_ptr<const kernels::RopeCache> rope, Heads heads);
  Tensor forward_partial(const attention::AttentionMetadata& md, const Tensor& x) override;

  // The MLA activations of x [tokens, hidden], all f32: q [tokens, H_l, nope + rope] (q_pe
  // roped), kv_c [tokens, kv_lora] (normed), k_pe [tokens, rope] (roped), and q_lora — the q
  // LoRA activation after q_a_layernorm [tokens, q_lora_rank], or x without a q LoRA — which
  // the sparse-attention indexer reads.
  struct Projections {
    Tensor q, kv_c, k_pe, q_lora;
  };
  Projections project(const attention::AttentionMetadata& md, const Tensor& x) const;

  ModelContext ctx_;
  MlaConfig mla_;
  attention::MlaDims dims_;  // per rank
  std::optional<ModelLinear> q_a_;
  Tensor q_a_norm_;
  std::optional<ColumnParallelLinear> q_;  // q_proj, or q_b_proj after the q LoRA
  ModelLinear kv_a_;                       // [kv_lora + rope, hidden], replicated
  Tensor kv_a_norm_;
  // [H_l·(nope + v), kv_lora] (H_l = H under Heads::kAll), f32 or bf16 as loaded.
  Tensor kv_b_;
  OutputProjection o_proj_;
  std::shared_ptr<const kernels::RopeCache> rope_;
  std::unique_ptr<attention::MlaAttention> impl_;
};

// The softmax scale of an MLA config: (nope + rope)^-1/2, times mscale² under YaRN with
// mscale_all_dim (as DeepSeek's reference and vLLM do).
float mla_softmax_scale(const ModelConfig& config);

}  // namespace ctxpar::model
