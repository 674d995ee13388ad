#include "ctxpar/model/layers/sfa_attention_layer.h"

#include <fmt/format.h>

#include <cmath>

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

SfaMode checked_mode(const ModelContext& ctx, const ModelConfig& c) {
  return resolve_sfa_mode(checked_sparse(c), ctx.tp_size(), ctx.dcp_size(),
                          ctx.options.enable_dsa_cp);
}

}  // namespace

SfaAttentionLayer::SfaAttentionLayer(const ModelContext& ctx, const ModelConfig& c, int64_t layer,
                                     std::shared_ptr<const kernels::RopeCache> rope)
    : MlaAttentionLayer(ctx, c, layer, std::move(rope),
                        splits_tokens(checked_mode(ctx, c)) ? Heads::kAll : Heads::kTensorParallel),
      mode_(checked_mode(ctx, c)),
      indexer_dims_{c.indexer.index_n_heads, c.indexer.index_head_dim, c.indexer.index_topk},
      indexer_rope_(c.indexer.interleaved_rope ? kernels::RopeStyle::kInterleaved
                                               : kernels::RopeStyle::kRotateHalf),
      weights_scale_(static_cast<float>(
          1.0 /
          std::sqrt(static_cast<double>(c.indexer.index_n_heads * c.indexer.index_head_dim)))),
      full_weights_(ctx.full_weights) {
  if (c.has_indexer(layer)) {
    const std::string p = indexer_prefix(layer);
    const int64_t ih = c.indexer.index_n_heads, id = c.indexer.index_head_dim;
    indexer_weights_.emplace(IndexerWeights{
        ColumnParallelLinear(
            ctx, {LinearPart{p + ".wq_b.weight", {ih * id, c.mla.q_lora_rank}, Slice::full(), ""}}),
        ColumnParallelLinear(
            ctx, {LinearPart{p + ".wk.weight", {id, c.hidden_size}, Slice::full(), ""},
                  LinearPart{p + ".weights_proj.weight", {ih, c.hidden_size}, Slice::full(), ""}}),
        ctx.load(p + ".k_norm.weight", {id}, Slice::full(), DType::kF32),
        ctx.load(p + ".k_norm.bias", {id}, Slice::full(), DType::kF32)});
  }
  if (full_weights_ == nullptr && splits_tokens(mode_)) {
    own_full_weights_ = std::make_unique<FullWeightWorkspace>();
    full_weights_ = own_full_weights_.get();
  }
}

void SfaAttentionLayer::set_topk_source(const SfaAttentionLayer* full_layer) {
  CTXPAR_CHECK(!has_indexer(), "a full indexer layer selects its own top-k");
  CTXPAR_CHECK(full_layer != nullptr && full_layer->has_indexer(),
               "a shared indexer layer needs a full layer's top-k");
  topk_source_ = full_layer;
}

const Tensor& SfaAttentionLayer::shared_selection() const {
  CTXPAR_CHECK(topk_source_ != nullptr,
               "shared indexer layer used before its top-k source was set (set_topk_source)");
  return topk_source_->last_selection();
}

kv::KvCacheSpec SfaAttentionLayer::kv_cache_spec() const {
  return MlaAttentionLayer::kv_cache_spec();
}

std::vector<kv::KvCacheSpec> SfaAttentionLayer::kv_cache_specs() const {
  if (!has_indexer()) return {kv_cache_spec()};  // a shared layer keeps no index keys
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
  const size_t want = has_indexer() ? 2 : 1;
  CTXPAR_CHECK(caches.size() == want, "a sparse-attention layer{} binds {} cache(s), got {}",
               has_indexer() ? "" : " sharing another's top-k", want, caches.size());
  const Tensor& latent = caches[0];
  CTXPAR_CHECK(latent.ndim() == 3 && latent.size(2) == dims_.latent_dim(),
               "SFA latent cache {} must be [blocks, B, {}]", latent.describe(),
               dims_.latent_dim());
  sfa_ = make_sfa_attention(mode_, dims_, latent, kv_b_, ctx_);
  if (has_indexer()) indexer_ = make_lightning_indexer(mode_, indexer_dims_, caches[1], ctx_);
}

SfaAttentionLayer::IndexerInputs SfaAttentionLayer::indexer_inputs(
    const attention::AttentionMetadata& md, const Tensor& x, const Tensor& q_lora) const {
  const int64_t tokens = x.size(0);
  const int64_t ih = indexer_dims_.num_heads, id = indexer_dims_.head_dim;
  // Rope part first, for q and k alike.
  const IndexerWeights& w8 = *indexer_weights_;
  IndexerInputs in;
  in.q = w8.q.forward(q_lora).view({tokens, ih, id});
  rope_->apply(in.q, md.common.positions, indexer_rope_);
  const Tensor kw = w8.kw.forward(x);  // [tokens, D + H_i]
  in.k = Tensor::empty({tokens, id}, DType::kF32);
  kernels::layer_norm(kw.slice(1, 0, id), w8.k_norm_weight, w8.k_norm_bias, kIndexKeyNormEps, in.k);
  rope_->apply(in.k, md.common.positions, indexer_rope_);
  in.weights = kw.slice(1, id, id + ih).contiguous();
  float* w = in.weights.data<float>();
  for (int64_t i = 0; i < in.weights.numel(); ++i) w[i] *= weights_scale_;
  return in;
}

Tensor SfaAttentionLayer::forward(const attention::AttentionMetadata& md, const Tensor& x) {
  if (!splits_tokens(mode_)) {
    Tensor y = forward_partial(md, x);
    o_proj_.reduce(y);
    return y;
  }
  CTXPAR_CHECK(md.dsa_cp, "{} needs DSA-CP metadata (make_metadata_builder)", sfa_mode_name(mode_));
  const SequenceShard sp(md.dsa_cp->shard, ctx_.groups.tp());
  return sp.gather(forward_slice(md, sp.local_rows(x)));
}

Tensor SfaAttentionLayer::forward_sharded(const attention::AttentionMetadata& md,
                                          const SequenceShard& sp, const Tensor& x_local) {
  if (!splits_tokens(mode_)) return AttentionLayer::forward_sharded(md, sp, x_local);
  CTXPAR_CHECK(md.dsa_cp && md.dsa_cp->shard.per_rank == sp.rows() &&
                   md.dsa_cp->shard.first == sp.shard().first,
               "DSA-CP token slices and sequence-parallel rows must be the same split");
  return forward_slice(md, x_local);
}

Tensor SfaAttentionLayer::forward_partial(const attention::AttentionMetadata& md, const Tensor& x) {
  CTXPAR_CHECK(sfa_ != nullptr, "SFA layer used before its KV caches were bound");
  CTXPAR_CHECK(!splits_tokens(mode_), "{} has no per-rank partial over all tokens",
               sfa_mode_name(mode_));
  const int64_t tokens = x.size(0), h = dims_.num_heads;
  const Projections p = project(md, x);
  if (has_indexer()) {
    const IndexerInputs in = indexer_inputs(md, x, p.q_lora);
    last_selection_ = indexer_->select(md, in.q, in.k, in.weights);
  } else {
    last_selection_ = shared_selection();
  }
  Tensor attn = Tensor::empty({tokens, h, dims_.v_head_dim}, DType::kF32);
  sfa_->forward(md, p.q, p.kv_c, p.k_pe, last_selection_, attn);
  return o_proj_.forward_partial(attn.view({tokens, h * dims_.v_head_dim}));
}

Tensor SfaAttentionLayer::forward_slice(const attention::AttentionMetadata& md,
                                        const Tensor& x_local) {
  CTXPAR_CHECK(sfa_ != nullptr, "SFA layer used before its KV caches were bound");
  CTXPAR_CHECK(md.dsa_cp && md.dsa_cp->local,
               "{} needs DSA-CP metadata: build the step with make_metadata_builder",
               sfa_mode_name(mode_));
  const attention::TokenShard& shard = md.dsa_cp->shard;
  const attention::AttentionMetadata& local = *md.dsa_cp->local;
  const int64_t n = shard.num_local(), rows = shard.per_rank, h = dims_.num_heads;
  const int64_t lora = dims_.kv_lora_rank, rope = dims_.qk_rope_head_dim;
  const int64_t id = indexer_dims_.head_dim;
  CTXPAR_CHECK(x_local.ndim() == 2 && x_local.size(0) == rows && local.common.num_tokens == n,
               "DSA-CP slice input {} must be [{}, hidden] with {} real rows", x_local.describe(),
               rows, n);
  Communicator& tp = ctx_.groups.tp();
  const Tensor x = x_local.slice(0, 0, n);
  const Projections p = project(local, x);
  if (!has_indexer()) {
    // A shared layer: only the latent rows are exchanged; the top-k is the source's.
    Tensor kv = Tensor::zeros({rows, lora + rope}, DType::kF32);
    kv.slice(0, 0, n).slice(1, 0, lora).copy_from(p.kv_c);
    kv.slice(0, 0, n).slice(1, lora, lora + rope).copy_from(p.k_pe);
    const Tensor all_kv = (tp.size() > 1 ? tp.all_gather(kv, 0) : kv).slice(0, 0, shard.num_tokens);
    sfa_->write(md, all_kv.slice(1, 0, lora), all_kv.slice(1, lora, lora + rope));
    last_selection_ = shared_selection();
  } else {
    const IndexerInputs in = indexer_inputs(local, x, p.q_lora);

    // Every slice's KV rows, [tokens, kv_lora + rope + D]: one all-gather, then both caches
    // are written with the step's metadata (owned slots only under DCP).
    Tensor kv = Tensor::zeros({rows, lora + rope + id}, DType::kF32);
    kv.slice(0, 0, n).slice(1, 0, lora).copy_from(p.kv_c);
    kv.slice(0, 0, n).slice(1, lora, lora + rope).copy_from(p.k_pe);
    kv.slice(0, 0, n).slice(1, lora + rope, lora + rope + id).copy_from(in.k);
    const Tensor all_kv = (tp.size() > 1 ? tp.all_gather(kv, 0) : kv).slice(0, 0, shard.num_tokens);
    sfa_->write(md, all_kv.slice(1, 0, lora), all_kv.slice(1, lora, lora + rope));
    indexer_->write(md, all_kv.slice(1, lora + rope, lora + rope + id));

    const bool sharded_indexer =
        mode_ == SfaMode::kDsaCpDcp &&
        ctx_.options.sfa_indexer_mode == attention::SfaIndexerMode::kSharded;
    if (sharded_indexer) {
      // The group merge of the sharded indexer needs the same query tokens on every rank.
      const int64_t ih = indexer_dims_.num_heads, q_width = ih * id;
      Tensor qw = Tensor::zeros({rows, q_width + ih}, DType::kF32);
      qw.slice(0, 0, n).slice(1, 0, q_width).copy_from(in.q.view({n, q_width}));
      qw.slice(0, 0, n).slice(1, q_width, q_width + ih).copy_from(in.weights);
      const Tensor all_qw = tp.all_gather(qw, 0).slice(0, 0, shard.num_tokens);
      const Tensor all_q =
          all_qw.slice(1, 0, q_width).contiguous().view({shard.num_tokens, ih, id});
      const Tensor all_weights = all_qw.slice(1, q_width, q_width + ih).contiguous();
      last_selection_ =
          indexer_->select_cached(md, all_q, all_weights).slice(0, shard.first, shard.last).clone();
    } else {
      last_selection_ = indexer_->select_cached(local, in.q, in.weights);
    }
  }

  Tensor attn = Tensor::zeros({rows, h, dims_.v_head_dim}, DType::kF32);
  Tensor attn_real = attn.slice(0, 0, n);
  sfa_->forward_cached(md, p.q, last_selection_, attn_real);
  return project_slice(md, attn.view({rows, h * dims_.v_head_dim}));
}

Tensor SfaAttentionLayer::project_slice(const attention::AttentionMetadata& md,
                                        const Tensor& attn) {
  Communicator& tp = ctx_.groups.tp();
  const int64_t t = tp.size(), rows = attn.size(0);
  if (t == 1) return o_proj_.forward_partial(attn);  // the shard is the whole weight
  if (md.decode_only()) {
    // [S, all heads] → [T·S, this rank's heads]: chunk j of every slice goes to rank j.
    const int64_t width = attn.size(1) / t;
    const Tensor send = attn.view({rows, t, width}).transpose(0, 1).contiguous();  // [T, S, w]
    const Tensor recv = tp.all_to_all(send, 0).view({t * rows, width});
    return tp.reduce_scatter(o_proj_.forward_partial(recv), 0);
  }
  const OutputProjection::FullWeight full = o_proj_.use_full_weight(*full_weights_);
  return o_proj_.forward_full(attn);
}

}  // namespace ctxpar::model
