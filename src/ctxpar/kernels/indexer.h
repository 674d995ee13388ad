// Lightning-indexer scores (DeepSeek-V3.2 sparse attention): how much each cached key matters
// to each query token, from a cheap multi-head ReLU score, so that attention runs only over
// the top-k keys (topk.h selects them).
//
//   score[t, s] = Σ_h w[t, h] · ReLU(q[t, h, :] · k[s, :])      for s < key_lens[t]
//
// The keys live in a paged cache of one index key per token: key index s of token t's
// request maps to row (block_table[req][s / R], s % R), where R = key_cache.size(1) is the
// rows per block — B for a per-rank (sharded) cache, B·N for the replicated indexer cache of
// DESIGN.md §4, where s is then the token's global position.
//
// Determinism: a score depends only on q[t], w[t] and the key's values, never on where the
// key sits in the cache or in the batch, so a key scored from a replicated cache and from a
// sharded one gives the same bits (the sharded indexer mode relies on this to select exactly
// the keys the replicated mode selects).
//
// FP8: DeepSeek rotates q and k by a Hadamard transform and stores them in fp8 with one scale
// per 128 values. The rotation is orthonormal, so q·k is unchanged in f32 and this code skips
// it; an fp8 path would quantize k where the caller writes the cache and q before this call,
// and fold q's scale into w.
#pragma once

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/tensor.h"
#include "ctxpar/core/thread_pool.h"

namespace ctxpar::kernels {

// q: [tokens, H, D] f32, last dim contiguous (other strides free).
// weights: [tokens, H] f32 (already scaled by the caller), last dim contiguous.
// key_cache: [num_blocks, R, D] f32 or bf16, last dim contiguous.
// block_tables: [num_reqs, max_blocks] i32; token_req, key_lens: [tokens] i32; every block a
// token's keys touch must hold an id in [0, num_blocks).
// scores: [tokens, n] f32, n >= every key_lens[t], last dim contiguous: row t gets its
// key_lens[t] scores, then -inf up to n.
// Work is split over (group of tokens of one request, chunk of keys) on the pool.
void indexer_scores(const Tensor& q, const Tensor& weights, const Tensor& key_cache,
                    const Tensor& block_tables, const Tensor& token_req, const Tensor& key_lens,
                    Tensor& scores, ThreadPool& pool);
// Same, forcing one SIMD variant (tests, benchmarks); throws if the CPU lacks it.
void indexer_scores(const Tensor& q, const Tensor& weights, const Tensor& key_cache,
                    const Tensor& block_tables, const Tensor& token_req, const Tensor& key_lens,
                    Tensor& scores, ThreadPool& pool, Isa isa);

// Scalar reference with double accumulation (scores rounded to f32 at the end); same contract.
void indexer_scores_reference(const Tensor& q, const Tensor& weights, const Tensor& key_cache,
                              const Tensor& block_tables, const Tensor& token_req,
                              const Tensor& key_lens, Tensor& scores);

}  // namespace ctxpar::kernels
