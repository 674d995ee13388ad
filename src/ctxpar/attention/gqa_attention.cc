#include "ctxpar/attention/gqa_attention.h"

#include <algorithm>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/attention.h"
#include "ctxpar/kernels/kv_cache_ops.h"
#include "ctxpar/kernels/merge.h"

namespace ctxpar::attention {
namespace {

// x / scale as a new contiguous f32 tensor: rows as the cache stores them.
Tensor divided(const Tensor& x, float scale) {
  Tensor out = x.to(DType::kF32);
  float* p = out.data<float>();
  for (int64_t i = 0; i < out.numel(); ++i) p[i] /= scale;
  return out;
}

// out [tokens, heads, d] *= s, out any strides.
void multiply(Tensor& out, float s) {
  for (int64_t t = 0; t < out.size(0); ++t) {
    for (int64_t h = 0; h < out.size(1); ++h) {
      float* row = out.data<float>() + t * out.stride(0) + h * out.stride(1);
      for (int64_t i = 0; i < out.size(2); ++i) row[i * out.stride(2)] *= s;
    }
  }
}

}  // namespace

GqaAttention::GqaAttention(const GqaDims& dims, Tensor k_cache, Tensor v_cache, ThreadPool& pool)
    : dims_(dims), k_cache_(std::move(k_cache)), v_cache_(std::move(v_cache)), pool_(pool) {
  CTXPAR_CHECK(dims.num_heads > 0 && dims.num_kv_heads > 0 && dims.head_dim > 0 &&
                   dims.num_heads % dims.num_kv_heads == 0,
               "GQA dims: {} query heads over {} KV heads of dim {}; heads must be positive and "
               "the query heads a multiple of the KV heads",
               dims.num_heads, dims.num_kv_heads, dims.head_dim);
  CTXPAR_CHECK(dims.k_scale > 0 && dims.v_scale > 0,
               "GQA KV cache scales {} and {} must be positive", dims.k_scale, dims.v_scale);
  for (const Tensor* c : {&k_cache_, &v_cache_}) {
    CTXPAR_CHECK(c->ndim() == 4 && c->size(2) == dims.num_kv_heads && c->size(3) == dims.head_dim,
                 "GQA cache {} must be [num_blocks, block_size, {}, {}]", c->describe(),
                 dims.num_kv_heads, dims.head_dim);
  }
}

void GqaAttention::forward(const AttentionMetadata& md, const Tensor& q, const Tensor& k,
                           const Tensor& v, Tensor& out) {
  const CommonAttentionMetadata& c = md.common;
  const int64_t tokens = c.num_tokens, h = dims_.num_heads, d = dims_.head_dim;
  CTXPAR_CHECK(q.ndim() == 3 && q.size(0) == tokens && q.size(1) == h && q.size(2) == d,
               "GQA q {} must be [{}, {}, {}]", q.describe(), tokens, h, d);
  CTXPAR_CHECK(out.ndim() == 3 && out.size(0) == tokens && out.size(1) == h && out.size(2) == d,
               "GQA out {} must be [{}, {}, {}]", out.describe(), tokens, h, d);

  // The cache holds k / k_scale and v / v_scale: the softmax scale takes k_scale, and every
  // output (a convex combination of stored values) v_scale, at the end.
  const bool scaled = dims_.k_scale != 1.0f || dims_.v_scale != 1.0f;
  const Tensor k_stored = scaled ? divided(k, dims_.k_scale) : k;
  const Tensor v_stored = scaled ? divided(v, dims_.v_scale) : v;

  // New KV first: owned slots only (-1 elsewhere), so the cache holds this step's tokens for
  // the next one.
  kernels::write_cache_rows(k_stored, c.slot_mapping, k_cache_);
  kernels::write_cache_rows(v_stored, c.slot_mapping, v_cache_);

  // New part from the raw k/v (identical on every rank of a DCP group, no communication) as
  // the cache holds them.
  Tensor lse = Tensor::empty({tokens, h}, DType::kF32);
  kernels::causal_attention(q, kernels::at_cache_dtype(k_stored, k_cache_),
                            kernels::at_cache_dtype(v_stored, v_cache_), c.query_start,
                            score_scale(), out, lse, pool_);

  // No token with cached context (a step of first prefills): the new part is the whole
  // answer, and the context pass with its DCP q all-gather and merge collectives is skipped.
  // num_computed is global, so every rank of a DCP group takes the same branch.
  if (std::any_of(c.num_computed.begin(), c.num_computed.end(),
                  [](int64_t computed) { return computed > 0; })) {
    Tensor ctx_out = Tensor::empty({tokens, h, d}, DType::kF32);
    Tensor ctx_lse = Tensor::empty({tokens, h}, DType::kF32);
    attend_context(md, q, ctx_out, ctx_lse);
    kernels::merge_attn_states(out, lse, ctx_out, ctx_lse);
  }
  if (dims_.v_scale != 1.0f) multiply(out, dims_.v_scale);
}

void GqaAttention::attend_context(const AttentionMetadata& md, const Tensor& q, Tensor& out,
                                  Tensor& lse) {
  attend_cache(md, q, md.common.context_key_lens, out, lse);
}

void GqaAttention::attend_cache(const AttentionMetadata& md, const Tensor& q,
                                const Tensor& key_lens, Tensor& out, Tensor& lse) {
  kernels::paged_attention(q, kernels::PagedKvView{k_cache_, v_cache_}, md.common.block_tables,
                           md.common.token_req, key_lens, score_scale(), out, lse, pool_);
}

}  // namespace ctxpar::attention
