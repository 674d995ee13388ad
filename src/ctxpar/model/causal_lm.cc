#include "ctxpar/model/causal_lm.h"

#include <fmt/format.h>

#include <cstdio>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/norm.h"
#include "ctxpar/model/layers/sfa_attention_layer.h"
#include "ctxpar/model/sfa_mode.h"

namespace ctxpar::model {
namespace {

Tensor load_norm(const ModelContext& ctx, const std::string& name, int64_t dim) {
  return ctx.load(name, {dim}, Slice::full(), DType::kF32);
}

const ModelConfig& validated(const ModelConfig& config, const ModelContext& ctx) {
  CTXPAR_CHECK_INPUT(
      !config.config_only,
      "{} is a config-only entry (a real deployment's sizes, for `ctxpar plan`); it is "
      "never loaded. Run a tiny built-in (e.g. builtin:tiny-glm5) or a checkpoint",
      config.source);
  validate_model_options(config, ctx.tp_size(), ctx.dcp_size(), ctx.options);
  // Sparse attention (N == T under DCP is validate_for_parallel's rule): the indexer's
  // queries come from the q LoRA activation.
  CTXPAR_CHECK(!config.is_sparse() || config.mla.q_lora_rank > 0,
               "{}: a sparse-attention model (Lightning Indexer) needs q_lora_rank > 0, got {}",
               config.source, config.mla.q_lora_rank);
  return config;
}

// residual += delta, both [rows, hidden] f32.
void add_into(Tensor& residual, const Tensor& delta) {
  float* r = residual.data<float>();
  const float* d = delta.data<float>();
  for (int64_t i = 0; i < residual.numel(); ++i) r[i] += d[i];
}

}  // namespace

DecoderLayer::DecoderLayer(const ModelContext& ctx, const ModelConfig& c, int64_t layer,
                           const std::shared_ptr<const kernels::RopeCache>& rope)
    : eps_(static_cast<float>(c.rms_norm_eps)),
      input_norm_(load_norm(ctx, fmt::format("model.layers.{}.input_layernorm.weight", layer),
                            c.hidden_size)),
      post_attention_norm_(
          load_norm(ctx, fmt::format("model.layers.{}.post_attention_layernorm.weight", layer),
                    c.hidden_size)) {
  if (c.is_sparse()) {
    attention_ = std::make_unique<SfaAttentionLayer>(ctx, c, layer, rope);
  } else if (c.is_mla()) {
    attention_ = std::make_unique<MlaAttentionLayer>(ctx, c, layer, rope);
  } else {
    attention_ = std::make_unique<GqaAttentionLayer>(ctx, c, layer, rope);
  }
  if (c.is_moe_layer(layer)) {
    moe_ = std::make_unique<MoeLayer>(ctx, c, layer);
  } else {
    mlp_ = std::make_unique<GatedMlp>(ctx, fmt::format("model.layers.{}.mlp", layer), c.hidden_size,
                                      c.intermediate_size, c.mlp_bias);
  }
}

Tensor DecoderLayer::mlp_partial(const Tensor& x) const {
  return moe_ ? moe_->forward_partial(x) : mlp_->forward_partial(x);
}

void DecoderLayer::forward(const attention::AttentionMetadata& md, Tensor& residual) {
  Tensor normed = Tensor::empty(residual.shape(), DType::kF32);
  kernels::rms_norm(residual, input_norm_, eps_, normed);
  const Tensor attn = attention_->forward(md, normed);
  kernels::add_rms_norm(residual, attn, post_attention_norm_, eps_, normed);
  add_into(residual, moe_ ? moe_->forward(normed) : mlp_->forward(normed));
}

void DecoderLayer::forward_sharded(const attention::AttentionMetadata& md, const SequenceShard& sp,
                                   Tensor& residual) {
  Tensor normed = Tensor::empty(residual.shape(), DType::kF32);
  kernels::rms_norm(residual, input_norm_, eps_, normed);
  const Tensor attn = attention_->forward_sharded(md, sp, normed);
  kernels::add_rms_norm(residual, attn, post_attention_norm_, eps_, normed);
  // Column-parallel in (all-gather first), row-parallel out (reduce-scatter over tokens).
  add_into(residual, sp.reduce_scatter(mlp_partial(sp.gather(normed))));
}

CausalLM::CausalLM(const ModelConfig& config, const ModelContext& ctx)
    : config_(validated(config, ctx)),
      full_weights_(std::make_unique<FullWeightWorkspace>()),
      ctx_{ctx.weights, ctx.groups,          ctx.options,
           ctx.pool,    full_weights_.get(), &config_.quantization},
      embed_(ctx_, "model.embed_tokens.weight", config.vocab_size, config.hidden_size),
      final_norm_(load_norm(ctx_, "model.norm.weight", config.hidden_size)) {
  const auto rope = make_rope_cache(config);
  if (config.num_nextn_predict_layers > 0 && ctx.groups.world().rank() == 0) {
    fmt::print(stderr,
               "info: {}: skipping {} multi-token-prediction layer(s) (model.layers.{}.*): "
               "ctxpar decodes without speculative MTP\n",
               config.source, config.num_nextn_predict_layers, config.num_hidden_layers);
  }
  const SfaAttentionLayer* last_full = nullptr;  // GLM-5: where shared layers take their top-k
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) {
    layers_.push_back(std::make_unique<DecoderLayer>(ctx_, config, l, rope));
    if (auto* sfa = dynamic_cast<SfaAttentionLayer*>(&layers_.back()->attention())) {
      if (sfa->has_indexer()) {
        last_full = sfa;
      } else {
        sfa->set_topk_source(last_full);
      }
    }
  }
  if (config.tie_word_embeddings) {
    lm_head_ = std::make_unique<ParallelLmHead>(ctx_, embed_, config.vocab_size);
  } else {
    lm_head_ = std::make_unique<ParallelLmHead>(ctx_, "lm_head.weight", config.vocab_size,
                                                config.hidden_size);
  }
}

std::vector<kv::KvCacheSpec> CausalLM::kv_cache_specs() const {
  std::vector<kv::KvCacheSpec> specs;
  for (const auto& layer : layers_) {
    for (const kv::KvCacheSpec& spec : layer->attention().kv_cache_specs()) specs.push_back(spec);
  }
  return specs;
}

void CausalLM::allocate_kv_cache(int32_t num_blocks) {
  CTXPAR_CHECK(num_blocks >= 1, "the KV cache needs at least one block per rank, got {}",
               num_blocks);
  kv_caches_.clear();
  kv_cache_bytes_ = 0;
  const kv::DcpLayout layout(ctx_.dcp_size(), ctx_.options.block_size, ctx_.options.interleave);
  for (const auto& layer : layers_) {
    std::vector<Tensor> caches;
    for (const kv::KvCacheSpec& spec : layer->attention().kv_cache_specs()) {
      // B rows per block for a DCP-sharded cache, B·N for a replicated one.
      Shape shape{num_blocks, spec.rows_per_block(layout)};
      if (spec.components > 1) shape.push_back(spec.components);
      if (spec.kind == kv::KvCacheKind::kGqa) shape.push_back(spec.heads_per_rank);
      shape.push_back(spec.head_dim);
      Tensor cache = Tensor::empty(shape, spec.dtype);
      kv_cache_bytes_ += static_cast<int64_t>(cache.nbytes());
      kv_caches_.push_back(cache);
      caches.push_back(std::move(cache));
    }
    layer->attention().bind_caches(std::move(caches));
  }
}

Tensor CausalLM::forward(const attention::AttentionMetadata& md, const Tensor& token_ids,
                         const Tensor& logits_indices) {
  CTXPAR_CHECK(token_ids.ndim() == 1 && token_ids.size(0) == md.common.num_tokens,
               "token_ids {} must hold the step's {} tokens", token_ids.describe(),
               md.common.num_tokens);
  Tensor residual;
  if (ctx_.options.sequence_parallel) {
    const attention::TokenShard shard =
        attention::make_token_shard(md.common.num_tokens, ctx_.tp_rank(), ctx_.tp_size());
    const SequenceShard sp(shard, ctx_.groups.tp());
    Tensor local = sp.reduce_scatter(embed_.forward_partial(token_ids));
    for (auto& layer : layers_) layer->forward_sharded(md, sp, local);
    residual = sp.gather(local);
  } else {
    residual = embed_.forward(token_ids);
    for (auto& layer : layers_) layer->forward(md, residual);
  }
  const int64_t n = logits_indices.size(0);
  Tensor selected = Tensor::empty({n, config_.hidden_size}, DType::kF32);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = logits_indices.data<int64_t>()[i];
    CTXPAR_CHECK(t >= 0 && t < md.common.num_tokens, "logits index {} outside [0, {})", t,
                 md.common.num_tokens);
    selected.select(0, i).copy_from(residual.select(0, t));
  }
  Tensor normed = Tensor::empty(selected.shape(), DType::kF32);
  kernels::rms_norm(selected, final_norm_, static_cast<float>(config_.rms_norm_eps), normed);
  return lm_head_->forward(normed);
}

}  // namespace ctxpar::model
