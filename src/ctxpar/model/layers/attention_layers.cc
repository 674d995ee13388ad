#include "ctxpar/model/layers/attention_layers.h"

#include <fmt/format.h>
#include <cmath>

#include "ctxpar/attention/context_parallel/gqa_dcp_attention.h"
#include "ctxpar/attention/context_parallel/mla_dcp_attention.h"
#include "ctxpar/core/error.h"
#include "ctxpar/kernels/batched_matmul.h"
#include "ctxpar/kernels/norm.h"
#include "ctxpar/model/kv_cache_scales.h"

namespace ctxpar::model {
namespace {

// q_a_layernorm and kv_a_layernorm use this eps whatever rms_norm_eps says (as HF and
// DeepSeek's reference build them).
constexpr float kLatentNormEps = 1e-6f;

std::string attn_prefix(int64_t layer) {
  return fmt::format("model.layers.{}.self_attn", layer);
}

Tensor rms_normed(const Tensor& x, const Tensor& weight, float eps) {
  Tensor y = Tensor::empty(x.shape(), DType::kF32);
  kernels::rms_norm(x, weight, eps, y);
  return y;
}

int64_t rope_max_positions(const ModelConfig& c) {
  // Positions beyond the trained context are still valid under rope scaling; the cache must
  // cover --max-model-len, which the engine bounds by derived_max_model_len.
  const double factor = c.rope.type == RopeType::kDefault ? 1.0 : std::max(1.0, c.rope.factor);
  return std::max(
             static_cast<int64_t>(
                 static_cast<double>(std::max<int64_t>(c.max_position_embeddings, 1)) * factor),
             derived_max_model_len(c)) +
         1;
}

}  // namespace

kernels::RopeScaling rope_scaling_of(const RopeConfig& rope) {
  kernels::RopeScaling s;
  switch (rope.type) {
    case RopeType::kDefault:
      s.type = "none";
      break;
    case RopeType::kLinear:
      s.type = "linear";
      break;
    case RopeType::kLlama3:
      s.type = "llama3";
      break;
    case RopeType::kYarn:
      s.type = "yarn";
      break;
  }
  s.factor = rope.factor;
  s.original_max_position = rope.original_max_position_embeddings;
  s.beta_fast = rope.beta_fast;
  s.beta_slow = rope.beta_slow;
  s.mscale = rope.mscale;
  s.mscale_all_dim = rope.mscale_all_dim;
  s.attention_factor = rope.attention_factor;
  s.low_freq_factor = rope.low_freq_factor;
  s.high_freq_factor = rope.high_freq_factor;
  return s;
}

std::shared_ptr<const kernels::RopeCache> make_rope_cache(const ModelConfig& c) {
  const int64_t rotary_dim = c.is_mla() ? c.mla.qk_rope_head_dim : c.head_dim;
  return std::make_shared<const kernels::RopeCache>(rotary_dim, rope_max_positions(c), c.rope.theta,
                                                    rope_scaling_of(c.rope));
}

float mla_softmax_scale(const ModelConfig& c) {
  double scale =
      1.0 / std::sqrt(static_cast<double>(c.mla.qk_nope_head_dim + c.mla.qk_rope_head_dim));
  if (c.rope.type == RopeType::kYarn && c.rope.mscale_all_dim != 0.0) {
    const double m = kernels::yarn_get_mscale(c.rope.factor, c.rope.mscale_all_dim);
    scale *= m * m;
  }
  return static_cast<float>(scale);
}

Tensor AttentionLayer::forward_sharded(const attention::AttentionMetadata& md,
                                       const SequenceShard& sp, const Tensor& x_local) {
  return sp.reduce_scatter(forward_partial(md, sp.gather(x_local)));
}

// ---- GQA ----

GqaAttentionLayer::GqaAttentionLayer(const ModelContext& ctx, const ModelConfig& c, int64_t layer,
                                     std::shared_ptr<const kernels::RopeCache> rope)
    : ctx_(ctx),
      num_kv_heads_(c.num_key_value_heads),
      dims_([&] {
        const int64_t t = ctx.tp_size();
        attention::GqaDims d;
        d.num_heads = c.num_attention_heads / t;
        d.num_kv_heads = c.num_key_value_heads >= t ? c.num_key_value_heads / t : 1;
        d.head_dim = c.head_dim;
        d.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
        const KvCacheScales kv_scales =
            read_kv_cache_scales(ctx.weights, attn_prefix(layer), ctx.options.kv_cache_dtype);
        d.k_scale = kv_scales.k;
        d.v_scale = kv_scales.v;
        return d;
      }()),
      qkv_([&] {
        const std::string p = attn_prefix(layer);
        const int64_t t = ctx.tp_size(), d = c.head_dim, kv = c.num_key_value_heads;
        // KV heads split over ranks, or (T > num_kv_heads) the rank's replicated head.
        const Slice kv_slice = kv >= t ? Slice::column_parallel(ctx.tp_rank(), t)
                                       : Slice::part(0, ctx.tp_rank() / (t / kv), kv);
        const bool bias = c.qkv_bias;
        return ColumnParallelLinear(ctx, {LinearPart{p + ".q_proj.weight",
                                                     {c.num_attention_heads * d, c.hidden_size},
                                                     Slice::column_parallel(ctx.tp_rank(), t),
                                                     bias ? p + ".q_proj.bias" : ""},
                                          LinearPart{p + ".k_proj.weight",
                                                     {kv * d, c.hidden_size},
                                                     kv_slice,
                                                     bias ? p + ".k_proj.bias" : ""},
                                          LinearPart{p + ".v_proj.weight",
                                                     {kv * d, c.hidden_size},
                                                     kv_slice,
                                                     bias ? p + ".v_proj.bias" : ""}});
      }()),
      o_proj_(ctx, attn_prefix(layer) + ".o_proj.weight",
              {c.hidden_size, c.num_attention_heads * c.head_dim},
              c.o_proj_bias ? attn_prefix(layer) + ".o_proj.bias" : ""),
      qk_norm_eps_(static_cast<float>(c.rms_norm_eps)),
      rope_(std::move(rope)) {
  if (c.qk_norm) {
    q_norm_ =
        ctx.load(attn_prefix(layer) + ".q_norm.weight", {c.head_dim}, Slice::full(), DType::kF32);
    k_norm_ =
        ctx.load(attn_prefix(layer) + ".k_norm.weight", {c.head_dim}, Slice::full(), DType::kF32);
  }
}

kv::KvCacheSpec GqaAttentionLayer::kv_cache_spec() const {
  return kv::gqa_kv_cache_spec(static_cast<int>(num_kv_heads_), static_cast<int>(dims_.head_dim),
                               ctx_.tp_size(), ctx_.options.kv_cache_dtype);
}

void GqaAttentionLayer::bind_cache(Tensor cache) {
  // cache [num_blocks, B, 2, Hkv_l, d]: K and V planes of one allocation.
  CTXPAR_CHECK(cache.ndim() == 5 && cache.size(2) == 2,
               "GQA cache {} must be [blocks, B, 2, {}, {}]", cache.describe(), dims_.num_kv_heads,
               dims_.head_dim);
  Tensor k = cache.select(2, 0), v = cache.select(2, 1);
  if (ctx_.dcp_size() > 1) {
    impl_ = std::make_unique<attention::GqaDcpAttention>(dims_, k, v, ctx_.pool, ctx_.groups.dcp(),
                                                         ctx_.options.comm_plan);
  } else {
    impl_ = std::make_unique<attention::GqaAttention>(dims_, k, v, ctx_.pool);
  }
}

Tensor GqaAttentionLayer::forward(const attention::AttentionMetadata& md, const Tensor& x) {
  Tensor y = forward_partial(md, x);
  o_proj_.reduce(y);
  return y;
}

Tensor GqaAttentionLayer::forward_partial(const attention::AttentionMetadata& md, const Tensor& x) {
  CTXPAR_CHECK(impl_ != nullptr, "GQA layer used before its KV cache was bound");
  const int64_t tokens = x.size(0), h = dims_.num_heads, kv = dims_.num_kv_heads,
                d = dims_.head_dim;
  const Tensor qkv = qkv_.forward(x);  // [tokens, (h + 2·kv)·d]
  Tensor q = qkv.slice(1, 0, h * d).contiguous().view({tokens, h, d});
  Tensor k = qkv.slice(1, h * d, (h + kv) * d).contiguous().view({tokens, kv, d});
  const Tensor v = qkv.slice(1, (h + kv) * d, (h + 2 * kv) * d).contiguous().view({tokens, kv, d});
  if (q_norm_.defined()) {
    // Qwen3: every head normalised over its d values, as rows of [tokens·heads, d].
    q = rms_normed(q.view({tokens * h, d}), q_norm_, qk_norm_eps_).view({tokens, h, d});
    k = rms_normed(k.view({tokens * kv, d}), k_norm_, qk_norm_eps_).view({tokens, kv, d});
  }
  rope_->apply(q, md.common.positions, kernels::RopeStyle::kRotateHalf);
  rope_->apply(k, md.common.positions, kernels::RopeStyle::kRotateHalf);
  Tensor attn = Tensor::empty({tokens, h, d}, DType::kF32);
  impl_->forward(md, q, k, v, attn);
  return o_proj_.forward_partial(attn.view({tokens, h * d}));
}

// ---- MLA ----

MlaAttentionLayer::MlaAttentionLayer(const ModelContext& ctx, const ModelConfig& c, int64_t layer,
                                     std::shared_ptr<const kernels::RopeCache> rope)
    : MlaAttentionLayer(ctx, c, layer, std::move(rope), Heads::kTensorParallel) {}

MlaAttentionLayer::MlaAttentionLayer(const ModelContext& ctx, const ModelConfig& c, int64_t layer,
                                     std::shared_ptr<const kernels::RopeCache> rope, Heads heads)
    : ctx_(ctx),
      mla_(c.mla),
      dims_([&] {
        attention::MlaDims d;
        d.num_heads =
            heads == Heads::kAll ? c.num_attention_heads : c.num_attention_heads / ctx.tp_size();
        d.kv_lora_rank = c.mla.kv_lora_rank;
        d.qk_nope_head_dim = c.mla.qk_nope_head_dim;
        d.qk_rope_head_dim = c.mla.qk_rope_head_dim;
        d.v_head_dim = c.mla.v_head_dim;
        d.scale = mla_softmax_scale(c);
        d.max_context_chunk = ctx.options.max_context_chunk;
        return d;
      }()),
      kv_a_(load_replicated_linear(ctx, attn_prefix(layer) + ".kv_a_proj_with_mqa.weight",
                                   {c.mla.kv_lora_rank + c.mla.qk_rope_head_dim, c.hidden_size})),
      kv_a_norm_(ctx.load(attn_prefix(layer) + ".kv_a_layernorm.weight", {c.mla.kv_lora_rank},
                          Slice::full(), DType::kF32)),
      kv_b_(ctx.load(
          attn_prefix(layer) + ".kv_b_proj.weight",
          {c.num_attention_heads * (c.mla.qk_nope_head_dim + c.mla.v_head_dim), c.mla.kv_lora_rank},
          heads == Heads::kAll ? Slice::full()
                               : Slice::column_parallel(ctx.tp_rank(), ctx.tp_size()),
          ctx.options.weight_dtype)),
      o_proj_(ctx, attn_prefix(layer) + ".o_proj.weight",
              {c.hidden_size, c.num_attention_heads * c.mla.v_head_dim}),
      rope_(std::move(rope)) {
  const std::string p = attn_prefix(layer);
  const KvCacheScales kv_scales = read_kv_cache_scales(ctx.weights, p, ctx.options.kv_cache_dtype);
  CTXPAR_CHECK_INPUT(!kv_scales.from_checkpoint,
                     "the checkpoint has FP8 KV cache scales for MLA layer '{}' (k {}, v {}), and "
                     "ctxpar's e4m3 latent cache runs with a scale of 1 only; use "
                     "--kv-cache-dtype auto or bfloat16",
                     p, kv_scales.k, kv_scales.v);
  const int64_t qk = c.mla.qk_nope_head_dim + c.mla.qk_rope_head_dim;
  const Slice head_rows =
      heads == Heads::kAll ? Slice::full() : Slice::column_parallel(ctx.tp_rank(), ctx.tp_size());
  if (c.mla.q_lora_rank > 0) {
    q_a_.emplace(
        load_replicated_linear(ctx, p + ".q_a_proj.weight", {c.mla.q_lora_rank, c.hidden_size}));
    q_a_norm_ =
        ctx.load(p + ".q_a_layernorm.weight", {c.mla.q_lora_rank}, Slice::full(), DType::kF32);
    q_.emplace(ctx,
               std::vector<LinearPart>{LinearPart{p + ".q_b_proj.weight",
                                                  {c.num_attention_heads * qk, c.mla.q_lora_rank},
                                                  head_rows,
                                                  ""}});
  } else {
    q_.emplace(
        ctx,
        std::vector<LinearPart>{LinearPart{
            p + ".q_proj.weight", {c.num_attention_heads * qk, c.hidden_size}, head_rows, ""}});
  }
}

kv::KvCacheSpec MlaAttentionLayer::kv_cache_spec() const {
  return kv::mla_kv_cache_spec(static_cast<int>(mla_.kv_lora_rank),
                               static_cast<int>(mla_.qk_rope_head_dim),
                               ctx_.options.kv_cache_dtype);
}

void MlaAttentionLayer::bind_cache(Tensor cache) {
  CTXPAR_CHECK(cache.ndim() == 3 && cache.size(2) == dims_.latent_dim(),
               "MLA cache {} must be [blocks, B, {}]", cache.describe(), dims_.latent_dim());
  if (ctx_.dcp_size() > 1) {
    impl_ = std::make_unique<attention::MlaDcpAttention>(dims_, cache, kv_b_, ctx_.pool,
                                                         ctx_.groups.dcp(), ctx_.options.comm_plan);
  } else {
    impl_ = std::make_unique<attention::MlaAttention>(dims_, cache, kv_b_, ctx_.pool);
  }
}

MlaAttentionLayer::Projections MlaAttentionLayer::project(const attention::AttentionMetadata& md,
                                                          const Tensor& x) const {
  const int64_t tokens = x.size(0), h = dims_.num_heads, nope = dims_.qk_nope_head_dim,
                rope = dims_.qk_rope_head_dim, lora = dims_.kv_lora_rank;
  Projections p;
  p.q_lora = q_a_ ? rms_normed(q_a_->forward(x, ctx_.pool), q_a_norm_, kLatentNormEps) : x;
  p.q = q_->forward(p.q_lora).view({tokens, h, nope + rope});
  Tensor q_pe = p.q.slice(2, nope, nope + rope);
  rope_->apply(q_pe, md.common.positions, kernels::RopeStyle::kInterleaved);

  const Tensor kv_a = kv_a_.forward(x, ctx_.pool);  // [tokens, kv_lora + rope]
  p.kv_c = rms_normed(kv_a.slice(1, 0, lora), kv_a_norm_, kLatentNormEps);
  Tensor k_pe = kv_a.slice(1, lora, lora + rope).contiguous().view({tokens, 1, rope});
  rope_->apply(k_pe, md.common.positions, kernels::RopeStyle::kInterleaved);
  p.k_pe = k_pe.view({tokens, rope});
  return p;
}

Tensor MlaAttentionLayer::forward(const attention::AttentionMetadata& md, const Tensor& x) {
  Tensor y = forward_partial(md, x);
  o_proj_.reduce(y);
  return y;
}

Tensor MlaAttentionLayer::forward_partial(const attention::AttentionMetadata& md, const Tensor& x) {
  CTXPAR_CHECK(impl_ != nullptr, "MLA layer used before its KV cache was bound");
  const int64_t tokens = x.size(0), h = dims_.num_heads;
  const Projections p = project(md, x);
  Tensor attn = Tensor::empty({tokens, h, dims_.v_head_dim}, DType::kF32);
  impl_->forward(md, p.q, p.kv_c, p.k_pe, attn);
  return o_proj_.forward_partial(attn.view({tokens, h * dims_.v_head_dim}));
}

}  // namespace ctxpar::model
