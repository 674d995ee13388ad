// The Lightning Indexer of sparse attention (DeepSeek-V3.2 / GLM-5, DESIGN.md §4 "SFA") on
// one rank: it keeps one index key per token in its own paged cache and picks, for every
// query token, the keys the sparse MLA attends to.
//
//   score[t, s] = Σ_h w[t, h] · ReLU(q[t, h] · k[s]),  s ≤ position(t)
//   selected[t] = the min(topk, position(t) + 1) positions of highest score (ties: lower
//                 position first), as global positions of the token's request.
//
// This class is the normal form and the DCP "replicated indexer": its cache is addressed by
// global position with blocks of B·N rows (kv::DcpLayout::replicated_slot, the same block
// table as the sharded KV), every rank writes every token and all ranks select the same keys
// with no communication. At N = 1 that is a plain per-token cache of B-row blocks. The
// sharded mode (context_parallel/sharded_lightning_indexer.h) overrides the write and the
// scoring.
#pragma once

#include <cstdint>

#include "ctxpar/attention/attention_metadata.h"
#include "ctxpar/core/tensor.h"
#include "ctxpar/core/thread_pool.h"

namespace ctxpar::attention {

struct IndexerDims {
  int64_t num_heads = 0;  // index_n_heads: all of them on every rank (the indexer is not split)
  int64_t head_dim = 0;   // index_head_dim
  int64_t topk = 0;       // index_topk
  // Bound on the f32 score buffer, [tokens of a chunk, keys]: long prefills are scored a
  // chunk of tokens at a time (at least one token per chunk).
  int64_t max_score_elements = int64_t{1} << 24;
};

// Test diagnostics. With counting on, every indexer of the process counts the selections
// (one per query token and layer, and per merge of the sharded mode) whose k-th and (k+1)-th
// best scores lie within kNearTieTolerance of the row's largest |score|: near ties, where the
// rounding of another batch shape (a prefix-cache hit, a recomputed preemption) can select the
// other key. Off by default: counting reads each score row once more.
inline constexpr float kNearTieTolerance = 1e-5f;
void set_near_tie_counting(bool on);  // and resets the count
int64_t near_tie_count();
// Adds the near ties among the rows of scores [rows, n] f32 (the first valid_len[r] of row r
// when valid_len [rows] i32 is given; -inf entries are no candidates) for a top-k of k. Does
// nothing while counting is off. Thread-safe.
void count_near_ties(const Tensor& scores, const Tensor* valid_len, int64_t k);

class LightningIndexer {
 public:
  // key_cache: [num_blocks, rows_per_block, head_dim] f32 or bf16, caller-owned, viewed.
  // Here rows_per_block must be the layout's B·N (checked per step against md.layout).
  LightningIndexer(const IndexerDims& dims, Tensor key_cache, ThreadPool& pool);
  virtual ~LightningIndexer() = default;

  // q [tokens, H_i, D] f32 (rope part roped), k [tokens, D] f32 (normed, roped), weights
  // [tokens, H_i] f32 (with the n_heads^-1/2 · D^-1/2 scale applied). Writes the step's keys,
  // then returns selected [tokens, topk] i32: global positions, best first, -1 after the
  // min(topk, position + 1) selected ones. Identical on every rank of a DCP group.
  Tensor select(const AttentionMetadata& md, const Tensor& q, const Tensor& k,
                const Tensor& weights);

  // select() in two stages, for DSA-CP, which writes the all-gathered keys of every token
  // slice with the step's metadata and selects for its own slice (md = the slice's own
  // metadata, md.dsa_cp->local) — or, in the sharded mode, for every token of the step.
  // write(): k [tokens, D] of md's tokens. select_cached(): q, weights of md's tokens, whose
  // keys are already written; returns [tokens, topk] as select() does.
  void write(const AttentionMetadata& md, const Tensor& k);
  Tensor select_cached(const AttentionMetadata& md, const Tensor& q, const Tensor& weights);

  const IndexerDims& dims() const { return dims_; }
  const Tensor& key_cache() const { return key_cache_; }

 protected:
  // Stores k [tokens, D] for the step's tokens.
  virtual void write_keys(const AttentionMetadata& md, const Tensor& k);
  // Fills selected [tokens, topk] (see select()).
  virtual void select_topk(const AttentionMetadata& md, const Tensor& q, const Tensor& weights,
                           Tensor& selected);

  // Scores each token t over the cache keys [0, key_lens[t]) of its request and writes its
  // top-k key indices ([tokens, topk] i32, best first, -1 tail) and, when `values` is given,
  // their scores ([tokens, topk] f32, -inf tail). Tokens are taken in chunks that keep the
  // score buffer under dims.max_score_elements.
  void score_and_pick(const AttentionMetadata& md, const Tensor& q, const Tensor& weights,
                      const Tensor& key_lens, Tensor& columns, Tensor* values);

  ThreadPool& pool() { return pool_; }

 private:
  IndexerDims dims_;
  Tensor key_cache_;
  ThreadPool& pool_;
};

}  // namespace ctxpar::attention
