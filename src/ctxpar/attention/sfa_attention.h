// Sparse MLA ("SFA", DeepSeek-V3.2 / GLM-5) of one layer on one rank (normal, N = 1): MLA
// attention where each query token attends only the keys its Lightning Indexer selected
// (lightning_indexer.h), given as global positions.
//
// The same latent cache as MLA (one [c_kv ‖ k_pe] row per token, DCP-sharded) and the same
// absorbed form for every token, decode and prefill alike: q_abs = [q_nope · W_UK ‖ q_pe]
// attends the selected latent rows (values = c_kv), then o = o_lat · W_UVᵀ per head. The
// expanded form of dense MLA prefill would expand every selected row once per query token
// (each token selects its own set), while the absorbed form reads each selected row once for
// all heads of a token — the form DeepSeek's sparse kernels use for prefill too. The new
// tokens' latents are written to the cache first, so the causal part needs no separate pass:
// a token selects only positions <= its own.
#pragma once

#include <cstdint>

#include "ctxpar/attention/attention_metadata.h"
#include "ctxpar/attention/mla_attention.h"
#include "ctxpar/core/tensor.h"
#include "ctxpar/core/thread_pool.h"

namespace ctxpar::attention {

class SfaAttention {
 public:
  // latent_cache: [num_blocks, B, kv_lora + rope] f32 or bf16 (this rank's rows; caller-owned).
  // kv_b_proj: this rank's slice [H_l·(nope + v), kv_lora], per head the W_UK rows then the
  // W_UV rows; viewed, not copied. dims.max_context_chunk bounds the rows the DCP variant
  // gathers at once.
  SfaAttention(const MlaDims& dims, Tensor latent_cache, Tensor kv_b_proj, ThreadPool& pool);
  virtual ~SfaAttention() = default;

  // q [tokens, H_l, nope + rope] (rope part roped), kv_c [tokens, kv_lora] (normed), k_pe
  // [tokens, rope] (roped), all f32; selected [tokens, k] i32: global positions of each
  // token's request to attend (-1: none), as LightningIndexer::select returns them, each <=
  // the token's own position. out [tokens, H_l, v] f32, fully written.
  void forward(const AttentionMetadata& md, const Tensor& q, const Tensor& kv_c, const Tensor& k_pe,
               const Tensor& selected, Tensor& out);

  // forward() in two stages, for callers that write the step's KV themselves (DSA-CP writes
  // the all-gathered KV of every token slice, then attends its own slice):
  // write() stores kv_c [tokens, kv_lora] and k_pe [tokens, rope] of md's tokens at their
  // slots; forward_cached() is the attention of tokens whose KV is already written. Its q,
  // selected and out have one row per query token: md's tokens, or under DSA-CP
  // (md.dsa_cp set) this rank's slice md.dsa_cp->local, with all heads.
  void write(const AttentionMetadata& md, const Tensor& kv_c, const Tensor& k_pe);
  void forward_cached(const AttentionMetadata& md, const Tensor& q, const Tensor& selected,
                      Tensor& out);

  const MlaDims& dims() const { return dims_; }

 protected:
  // q_abs [tokens, H_l, kv_lora + rope] → o_lat [tokens, H_l, kv_lora], lse [tokens, H_l]
  // over each token's selected keys (tokens: the query rows of forward_cached). Here: local
  // index = position.
  virtual void attend(const AttentionMetadata& md, const Tensor& q_abs, const Tensor& selected,
                      Tensor& o_lat, Tensor& lse);
  // Absorbed attention of q_abs over this rank's latent rows with local key indices
  // [tokens, k] i32 (-1: none) of each token's request.
  void attend_local(const AttentionMetadata& md, const Tensor& q_abs, const Tensor& local_indices,
                    Tensor& o_lat, Tensor& lse);

  const Tensor& latent_cache() const { return latent_cache_; }
  ThreadPool& pool() { return pool_; }

 private:
  MlaDims dims_;
  Tensor latent_cache_;
  Tensor kv_b_proj_;  // [H_l·(nope + v), kv_lora]
  ThreadPool& pool_;
};

}  // namespace ctxpar::attention
