// MLA attention (DeepSeek-V2/V3) of one layer on one rank (normal, N = 1). The cache holds
// one latent row per token, [c_kv (kv_lora_rank) ‖ k_pe (qk_rope_head_dim)], shared by all
// heads. Holds a view of the rank's kv_b_proj slice, used in two forms (DESIGN.md §4):
//  - decode (absorbed): q_lat = q_nope · W_UK per head, attend [q_lat ‖ q_pe] to the latent
//    rows (values = c_kv), then o = o_lat · W_UVᵀ per head;
//  - prefill (expanded): k_nope, v = kv_b_proj(c_kv) for the new tokens (causal) and for the
//    cached context (read in chunks of at most max_context_chunk rows), merged by LSE.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "ctxpar/attention/attention_metadata.h"
#include "ctxpar/core/tensor.h"
#include "ctxpar/core/thread_pool.h"

namespace ctxpar::attention {

struct MlaDims {
  int64_t num_heads = 0;  // heads on this rank (H_l)
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
  float scale = 1.0f;                // softmax scale incl. any YaRN mscale² correction
  int64_t max_context_chunk = 8192;  // bound on gathered context rows per prefill chunk

  int64_t latent_dim() const { return kv_lora_rank + qk_rope_head_dim; }
  int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

// Throws unless dims are positive and latent_cache [blocks, B, kv_lora + rope] and kv_b_proj
// [H_l·(nope + v), kv_lora] match them; `what` ("MLA", "SFA") starts the message.
void check_mla_operands(const MlaDims& dims, const Tensor& latent_cache, const Tensor& kv_b_proj,
                        std::string_view what);

// A prefill context chunk: latent rows of several requests, request-contiguous.
struct ContextChunk {
  Tensor rows;                     // [rows, kv_lora + rope] f32
  std::vector<int32_t> key_start;  // [num_prefill_reqs + 1] prefix sums of rows per request
};

class MlaAttention {
 public:
  // latent_cache: [num_blocks, B, kv_lora + rope] f32 or bf16 (caller-owned).
  // kv_b_proj: this rank's slice [H_l·(nope + v), kv_lora] f32 or bf16, per head the nope rows
  // (W_UK) then the v rows (W_UV); viewed, not copied.
  MlaAttention(const MlaDims& dims, Tensor latent_cache, Tensor kv_b_proj, ThreadPool& pool);
  virtual ~MlaAttention() = default;

  // q [tokens, H_l, nope + rope] (rope part roped), kv_c [tokens, kv_lora] (normed),
  // k_pe [tokens, rope] (roped), all f32. out [tokens, H_l, v] f32, fully written.
  void forward(const AttentionMetadata& md, const Tensor& q, const Tensor& kv_c, const Tensor& k_pe,
               Tensor& out);

  const MlaDims& dims() const { return dims_; }

 protected:
  // Decode: q_abs [decodes, H_l, kv_lora + rope] → o_lat [decodes, H_l, kv_lora],
  // lse [decodes, H_l], over the cached keys up to and including each token.
  virtual void attend_decode(const AttentionMetadata& md, const Tensor& q_abs, Tensor& o_lat,
                             Tensor& lse);
  // Paged MLA attention of q_abs over this rank's latent rows [0, key_lens[t]).
  void attend_latent(const AttentionMetadata& md, const Tensor& q_abs, const Tensor& token_req,
                     const Tensor& key_lens, Tensor& o_lat, Tensor& lse);

  // Prefill context rows with local index in [first, first + window) of each prefill
  // request (requests num_decode_reqs..num_reqs-1), request-contiguous.
  virtual ContextChunk load_context(const AttentionMetadata& md, int64_t first, int64_t window);
  // Ranks whose rows one context chunk gathers (bounds the workspace): 1 here.
  virtual int64_t context_group_size() const { return 1; }

  const Tensor& latent_cache() const { return latent_cache_; }
  ThreadPool& pool() { return pool_; }

 private:
  void forward_decode(const AttentionMetadata& md, const Tensor& q, Tensor& out);
  void forward_prefill(const AttentionMetadata& md, const Tensor& q, const Tensor& kv_c,
                       const Tensor& k_pe, Tensor& out);
  // Expanded form of latent rows [rows, kv_lora + rope]: k [rows, H_l, nope + rope] (f32 or
  // bf16, written converted) and kv [rows, H_l, nope + v] f32 whose [..., nope:] part is v.
  void expand(const Tensor& latent_c, const Tensor& k_pe, Tensor& k, Tensor& kv) const;

  MlaDims dims_;
  Tensor latent_cache_;
  Tensor kv_b_proj_;  // [H_l·(nope + v), kv_lora]
  ThreadPool& pool_;
};

}  // namespace ctxpar::attention
