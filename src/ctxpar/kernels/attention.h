// CPU attention that returns the log-sum-exp (LSE) of each output, so partials over disjoint
// key sets can be merged exactly (merge.h, DESIGN.md §3).
//
// Conventions for every function here:
// - A query row is (token t, query head h); query head h reads KV head h / (Hq / Hkv), and all
//   query heads of one KV head are computed together, so each K/V row is read once per token
//   (once per group of tokens that share the same keys).
// - o[t,h,:] = Σ_j softmax_j(scale·q·k_j) v_j and lse[t,h] = log Σ_j exp(scale·q·k_j), natural
//   log. A row with no keys gets o = 0, lse = -inf (never NaN).
// - Accumulation is f32 with an online softmax; internally scores are kept in base 2
//   (scaled by scale·log2(e)) and the LSE is converted back to natural log.
// - With a bf16 cache (k and v bf16), q is rounded to bf16 (nearest even) before the
//   products, as the cache rounded k: what a bf16 model's q is, and what lets CPUs with
//   AVX-512 BF16 take the scores as bf16 dot products; the products are exact in f32 either
//   way. f32 and e4m3 caches use q as given. Where those dot products are fast
//   (attention_rounds_weights) P·V is one too: the softmax weights are rounded to bf16, as
//   GPU flash attention rounds them, so each value of o is within 2^-9·Σ_j p_j·|v_j| of
//   exact (p the softmax weights; about 1e-3 relative, the size of the cache's own rounding
//   of v) while the lse keeps f32 precision. The running max of the base-2 scores is kept a
//   whole number, so a weight rounds the same however the keys are split (threads, DCP
//   shards), and merged results match unsplit ones to f32 rounding.
// - Tensors are caller-owned; out and lse are written in full and may be strided views
//   (last dim contiguous). Inputs need a contiguous last dim, other strides are arbitrary.
// - Work is split over (token group, KV heads, key chunk) on the pool. A job takes the query
//   heads of as many KV heads of a token as fit 64 rows (a token's KV heads are adjacent in
//   the cache, so one pass reads them together). With more than one thread, a job holding
//   more than about 1/(4·threads) of the call's work is split along its keys (split-K: one
//   decode token over 32K keys keeps every thread busy); the chunk partials are merged with
//   the code of merge.h.
// - Bad shapes, dtypes or indices throw ctxpar::Error naming the value and what is valid.
//
// Every function has a `_reference` twin: scalar, double accumulation, for tests. The overloads
// taking an Isa force one variant (tests and benchmarks); they throw if the CPU lacks it.
#pragma once

#include <cstdint>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/tensor.h"
#include "ctxpar/core/thread_pool.h"

namespace ctxpar::kernels {

// Whether the kernel of `isa` may round the softmax weights to bf16 for P·V over a cache of
// kv_dtype on this CPU (see the conventions above): bf16 caches at Isa::kAvx512, and at
// Isa::kAmx for the jobs it leaves to AVX-512, where vdpbf16ps is fast.
bool attention_rounds_weights(Isa isa, DType kv_dtype);

// Paged KV cache of one layer. A token's local key index li maps to row
// (block_table[req][li / B], li % B).
// k_cache: [num_blocks, B, Hkv, dk], v_cache: [num_blocks, B, Hkv, dv]; both f32, both bf16 or
// both float8_e4m3fn (per-tensor scale 1, as vLLM's --kv-cache-dtype fp8 without scales).
// Last dims contiguous, other strides arbitrary, so MLA can pass views of one latent cache
// (k = cache[..., 0:dk], v = cache[..., 0:kv_lora], Hkv = 1); when v is such a prefix of the
// k rows the kernel reads each row once.
struct PagedKvView {
  Tensor k_cache;
  Tensor v_cache;
};

// Dense paged attention. Query token t attends local keys [0, key_lens[t]) of request
// token_req[t] (a row of block_tables).
// q: [tokens, Hq, dk] f32; block_tables: [num_reqs, max_blocks] i32 (entries of blocks past a
// request's keys are not read); token_req, key_lens: [tokens] i32;
// out: [tokens, Hq, dv] f32; lse: [tokens, Hq] f32.
void paged_attention(const Tensor& q, const PagedKvView& kv, const Tensor& block_tables,
                     const Tensor& token_req, const Tensor& key_lens, float scale, Tensor& out,
                     Tensor& lse, ThreadPool& pool);
void paged_attention(const Tensor& q, const PagedKvView& kv, const Tensor& block_tables,
                     const Tensor& token_req, const Tensor& key_lens, float scale, Tensor& out,
                     Tensor& lse, ThreadPool& pool, Isa isa);
void paged_attention_reference(const Tensor& q, const PagedKvView& kv, const Tensor& block_tables,
                               const Tensor& token_req, const Tensor& key_lens, float scale,
                               Tensor& out, Tensor& lse);

// Index-selected (sparse) paged attention: token t attends the local key indices
// indices[t, :] ([tokens, max_sel] i32); -1 means "no key" and may appear anywhere. A token
// with no valid index gets o = 0, lse = -inf. Other arguments as paged_attention.
void paged_attention_selected(const Tensor& q, const PagedKvView& kv, const Tensor& block_tables,
                              const Tensor& token_req, const Tensor& indices, float scale,
                              Tensor& out, Tensor& lse, ThreadPool& pool);
void paged_attention_selected(const Tensor& q, const PagedKvView& kv, const Tensor& block_tables,
                              const Tensor& token_req, const Tensor& indices, float scale,
                              Tensor& out, Tensor& lse, ThreadPool& pool, Isa isa);
void paged_attention_selected_reference(const Tensor& q, const PagedKvView& kv,
                                        const Tensor& block_tables, const Tensor& token_req,
                                        const Tensor& indices, float scale, Tensor& out,
                                        Tensor& lse);

// MLA decode in absorbed form (MQA over the latent). q: [tokens, H, kv_lora_rank + rope] f32;
// latent_cache: [num_blocks, B, kv_lora_rank + rope] f32 or bf16 (one head; last dim
// contiguous); keys are whole rows, values their first kv_lora_rank dims;
// out: [tokens, H, kv_lora_rank] f32; lse: [tokens, H] f32. Each cache row is read once for
// all H heads of a token.
void paged_mla_attention(const Tensor& q, const Tensor& latent_cache, int64_t kv_lora_rank,
                         const Tensor& block_tables, const Tensor& token_req,
                         const Tensor& key_lens, float scale, Tensor& out, Tensor& lse,
                         ThreadPool& pool);
void paged_mla_attention(const Tensor& q, const Tensor& latent_cache, int64_t kv_lora_rank,
                         const Tensor& block_tables, const Tensor& token_req,
                         const Tensor& key_lens, float scale, Tensor& out, Tensor& lse,
                         ThreadPool& pool, Isa isa);
void paged_mla_attention_reference(const Tensor& q, const Tensor& latent_cache,
                                   int64_t kv_lora_rank, const Tensor& block_tables,
                                   const Tensor& token_req, const Tensor& key_lens, float scale,
                                   Tensor& out, Tensor& lse);

// MLA with index-selected keys (SFA): as paged_mla_attention with indices as in
// paged_attention_selected.
void paged_mla_attention_selected(const Tensor& q, const Tensor& latent_cache, int64_t kv_lora_rank,
                                  const Tensor& block_tables, const Tensor& token_req,
                                  const Tensor& indices, float scale, Tensor& out, Tensor& lse,
                                  ThreadPool& pool);
void paged_mla_attention_selected(const Tensor& q, const Tensor& latent_cache, int64_t kv_lora_rank,
                                  const Tensor& block_tables, const Tensor& token_req,
                                  const Tensor& indices, float scale, Tensor& out, Tensor& lse,
                                  ThreadPool& pool, Isa isa);
void paged_mla_attention_selected_reference(const Tensor& q, const Tensor& latent_cache,
                                            int64_t kv_lora_rank, const Tensor& block_tables,
                                            const Tensor& token_req, const Tensor& indices,
                                            float scale, Tensor& out, Tensor& lse);

// Causal attention over contiguous raw k/v of this step's new tokens. cu_seqlens:
// [num_seqs + 1] i32, cu_seqlens[0] == 0, non-decreasing, last == tokens; query i of a sequence
// attends keys 0..i of the same sequence.
// q: [tokens, Hq, dk]; k: [tokens, Hkv, dk]; v: [tokens, Hkv, dv] (k and v f32 or both bf16);
// out: [tokens, Hq, dv] f32; lse: [tokens, Hq] f32.
void causal_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_seqlens,
                      float scale, Tensor& out, Tensor& lse, ThreadPool& pool);
void causal_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_seqlens,
                      float scale, Tensor& out, Tensor& lse, ThreadPool& pool, Isa isa);
void causal_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                const Tensor& cu_seqlens, float scale, Tensor& out, Tensor& lse);

// Non-causal attention with separate query and key ranges (MLA chunked-prefill context part
// after expansion): the query tokens of sequence s (q_cu_seqlens[s]..q_cu_seqlens[s+1]) attend
// all keys of sequence s (k_cu_seqlens[s]..k_cu_seqlens[s+1]). Both cu arrays [num_seqs + 1]
// i32 as in causal_attention, over q tokens and k tokens respectively. Shapes as
// causal_attention with k/v having their own token count.
void varlen_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_cu_seqlens,
                      const Tensor& k_cu_seqlens, float scale, Tensor& out, Tensor& lse,
                      ThreadPool& pool);
void varlen_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_cu_seqlens,
                      const Tensor& k_cu_seqlens, float scale, Tensor& out, Tensor& lse,
                      ThreadPool& pool, Isa isa);
void varlen_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                const Tensor& q_cu_seqlens, const Tensor& k_cu_seqlens, float scale,
                                Tensor& out, Tensor& lse);

}  // namespace ctxpar::kernels
