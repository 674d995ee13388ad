// GQA/MHA attention of one layer on one rank (normal, N = 1). Holds no weights: it takes the
// projected, roped q/k/v of the step's new tokens, writes the new KV to the paged cache, and
// returns attention over context + new tokens (DESIGN.md §4).
//
//   out = merge(context part: new tokens → cached keys with p < num_computed,
//               new part:     causal attention among the request's new tokens (raw k/v))
#pragma once

#include <cstdint>

#include "ctxpar/attention/attention_metadata.h"
#include "ctxpar/core/tensor.h"
#include "ctxpar/core/thread_pool.h"

namespace ctxpar::attention {

struct GqaDims {
  int64_t num_heads = 0;     // query heads on this rank (H_l)
  int64_t num_kv_heads = 0;  // KV heads on this rank; num_heads % num_kv_heads == 0
  int64_t head_dim = 0;
  float scale = 1.0f;  // softmax scale, usually head_dim^-1/2
  // An e4m3 cache's per-tensor scales (model/kv_cache_scales.h): the cache holds k / k_scale
  // and v / v_scale; 1 for other caches.
  float k_scale = 1.0f;
  float v_scale = 1.0f;
};

class GqaAttention {
 public:
  // k_cache / v_cache: [num_blocks, B, num_kv_heads, head_dim], f32 or bf16, owned by the
  // caller (the model runner's KV cache) and kept alive while this object is used.
  GqaAttention(const GqaDims& dims, Tensor k_cache, Tensor v_cache, ThreadPool& pool);
  virtual ~GqaAttention() = default;

  // q [tokens, H_l, d], k and v [tokens, Hkv_l, d] (f32, roped); out [tokens, H_l, d] f32,
  // caller-allocated and fully written. With k / v scales, every key and value, new ones
  // included, is attended as the cache holds it: scale · cache_dtype(x / scale).
  void forward(const AttentionMetadata& md, const Tensor& q, const Tensor& k, const Tensor& v,
               Tensor& out);

  const GqaDims& dims() const { return dims_; }

 protected:
  // Context part for all tokens: out [tokens, H_l, d], lse [tokens, H_l]. The DCP impl
  // overrides this stage only: the context is what is sharded.
  virtual void attend_context(const AttentionMetadata& md, const Tensor& q, Tensor& out,
                              Tensor& lse);

  // Paged attention of q [tokens, heads, d] over this rank's cache, keys [0, key_lens[t]).
  void attend_cache(const AttentionMetadata& md, const Tensor& q, const Tensor& key_lens,
                    Tensor& out, Tensor& lse);

  ThreadPool& pool() { return pool_; }

 private:
  // The softmax scale on stored keys: dims_.scale · k_scale.
  float score_scale() const { return dims_.scale * dims_.k_scale; }

  GqaDims dims_;
  Tensor k_cache_;
  Tensor v_cache_;
  ThreadPool& pool_;
};

}  // namespace ctxpar::attention
