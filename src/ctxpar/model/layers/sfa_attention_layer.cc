#include "ctxpar/model/layers/sfa_attention_layer.h"

#include <fmt/format.h>

#include <cmath>

#include "ctxpar/attention/context_parallel/sfa_dcp_attention.h"
#include "ctxpar/attention/context_parallel/sharded_lightning_indexer.h"
#include "ctxpar/core/error.h"
#include "ctxpar/kernels/norm.h"

namespace ctxpar::model {
namespace {

// DeepSeek's reference builds the indexer's k_norm as LayerNorm(dim) with eps 1e-6.
constexpr float kIndexKeyNormEps = 1e-6f;

std::string indexer_prefix(int64_t layer) {
  return fmt::format("model.layers.{}.self_attn.indexer", layer);
}

const ModelConfig& checked_sparse(const ModelConfig& c) {
  CTXPAR_CHECK(c.is_sparse() && c.mla.q_lora_rank > 0,
               "{}: sparse attention needs index_n_heads > 0 and a q LoRA (q_lora_rank > 0, got "
               "{}): the Lightning Indexer's queries come from the q LoRA activation",
               c.source, c.mla.q_lora_rank);
  return c;
}

}  // namespace

SfaAttentionLayer::SfaAttentionLayer(const ModelContext& ctx, const ModelConfig& c, int64_t layer,
                                     std::shared_ptr<const kernels::RopeCache> rope)
    : MlaAttentionLayer(ctx, checked_sparse(c), layer, std::move(rope)),
      indexer_dims_{c.indexer.index_n_heads, c.indexer.index_head_dim, c.indexer.index_topk},
      weights_scale_(static_cast<float>(
          1.0 /
          std::sqrt(static_cast<double>(c.indexer.index_n_heads * c.indexer.index_head_dim)))),
      index_q_(ctx,
               {LinearPart{indexer_prefix(layer) + ".wq_b.weight",
                           {c.indexer.index_n_heads * c.indexer.index_head_dim, c.mla.q_lora_rank},
                           Slice::full(),
                           ""}}),
      index_kw_(ctx, {LinearPart{indexer_prefix(layer) + ".wk.weight",
                                 {c.indexer.index_head_dim, c.hidden_size},
                                 Slice::full(),
                                 ""},
                      LinearPart{indexer_prefix(layer) + ".weights_proj.weight",
                                 {c.indexer.index_n_heads, c.hidden_size},
                                 Slice::full(),
                                 ""}}),
      k_norm_weight_(ctx.load(indexer_prefix(layer) + ".k_norm.weight", {c.indexer.index_head_dim},
                              Slice::full(), DType::kF32)),
      k_norm_bias_(ctx.load(indexer_prefix(layer) + ".k_norm.bias", {c.indexer.index_head_dim},
                            Slice::full(), DType::kF32)) {}

kv::KvCacheSpec SfaAttentionLayer::kv_cache_spec() const {
  return MlaAttentionLayer::kv_cache_spec();
}

std::vector<kv::KvCacheSpec> SfaAttentionLayer::kv_cache_specs() const {
  kv::KvCacheSpec keys = kv::indexer_kv_cache_spec(static_cast<int>(indexer_dims_.head_dim),
                                                   ctx_.options.kv_cache_dtype);
  // Sharded mode: a rank keeps only the keys of the tokens it owns, like the latent.
  keys.sharded_by_dcp =
      ctx_.dcp_size() > 1 && ctx_.options.sfa_indexer_mode == attention::SfaIndexerMode::kSharded;
  return {kv_cache_spec(), keys};
}

void SfaAttentionLayer::bind_cache(Tensor) {
  CTXPAR_FAIL(
      "a sparse-attention layer keeps two caches (latent and index keys); bind both with "
      "bind_caches as kv_cache_specs() lists them");
}

void SfaAttentionLayer::bind_caches(std::vector<Tensor> caches) {
  CTXPAR_CHECK(caches.size() == 2, "a sparse-attention layer binds 2 caches, got {}",
               caches.size());
  const Tensor& latent = caches[0];
  CTXPAR_CHECK(latent.ndim() == 3 && latent.size(2) == dims_.latent_dim(),
               "SFA latent cache {} must be [blocks, B, {}]", latent.describe(),
               dims_.latent_dim());
  if (ctx_.dcp_size() > 1) {
    sfa_ = std::make_unique<attention::SfaDcpAttention>(dims_, latent, kv_b_, ctx_.pool,
                                                        ctx_.groups.dcp(), ctx_.options.comm_plan);
    if (ctx_.options.sfa_indexer_mode == attention::SfaIndexerMode::kSharded) {
      indexer_ = std::make_unique<attention::ShardedLightningIndexer>(indexer_dims_, caches[1],
                                                                      ctx_.pool, ctx_.groups.dcp());
    } else {
      indexer_ = std::make_unique<attention::LightningIndexer>(indexer_dims_, caches[1], ctx_.pool);
    }
  } else {
    sfa_ = std::make_unique<attention::SfaAttention>(dims_, latent, kv_b_, ctx_.pool);
    indexer_ = std::make_unique<attention::LightningIndexer>(indexer_dims_, caches[1], ctx_.pool);
  }
}

Tensor SfaAttentionLayer::forward(const attention::AttentionMetadata& md, const Tensor& x) {
  CTXPAR_CHECK(sfa_ != nullptr, "SFA layer used before its KV caches were bound");
  const int64_t tokens = x.size(0), h = dims_.num_heads;
  const int64_t ih = indexer_dims_.num_heads, id = indexer_dims_.head_dim;
  const Projections p = project(md, x);

  // Indexer activations: q [tokens, H_i, D] and k [tokens, D], rope part first and
  // rotate-half; weights [tokens, H_i].
  Tensor index_q = index_q_.forward(p.q_lora).view({tokens, ih, id});
  rope_->apply(index_q, md.common.positions, kernels::RopeStyle::kRotateHalf);
  const Tensor kw = index_kw_.forward(x);  // [tokens, D + H_i]
  Tensor index_k = Tensor::empty({tokens, id}, DType::kF32);
  kernels::layer_norm(kw.slice(1, 0, id), k_norm_weight_, k_norm_bias_, kIndexKeyNormEps, index_k);
  rope_->apply(index_k, md.common.positions, kernels::RopeStyle::kRotateHalf);
  Tensor weights = kw.slice(1, id, id + ih).contiguous();
  float* w = weights.data<float>();
  for (int64_t i = 0; i < weights.numel(); ++i) w[i] *= weights_scale_;

  last_selection_ = indexer_->select(md, index_q, index_k, weights);
  Tensor attn = Tensor::empty({tokens, h, dims_.v_head_dim}, DType::kF32);
  sfa_->forward(md, p.q, p.kv_c, p.k_pe, last_selection_, attn);
  return o_proj_.forward(attn.view({tokens, h * dims_.v_head_dim}));
}

}  // namespace ctxpar::model
