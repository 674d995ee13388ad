#include "ctxpar/attention/lightning_indexer.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <span>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/indexer.h"
#include "ctxpar/kernels/kv_cache_ops.h"
#include "ctxpar/kernels/topk.h"

namespace ctxpar::attention {
namespace {

std::atomic<bool> g_count_near_ties{false};
std::atomic<int64_t> g_near_ties{0};

// Whether the k-th and (k+1)-th largest of row[0, n) are a near tie (see the header).
bool is_near_tie(const float* row, int64_t n, int64_t k) {
  if (n <= k) return false;
  std::vector<float> v(row, row + n);
  std::nth_element(v.begin(), v.begin() + k, v.end(), std::greater<float>());
  const float next = v[static_cast<size_t>(k)];  // the (k+1)-th largest
  if (next == -std::numeric_limits<float>::infinity()) return false;
  const float kth = *std::min_element(v.begin(), v.begin() + k);
  float scale = 0;
  for (const float x : v) {
    if (std::isfinite(x)) scale = std::max(scale, std::abs(x));
  }
  return kth - next <= kNearTieTolerance * scale;
}

}  // namespace

void set_near_tie_counting(bool on) {
  g_near_ties = 0;
  g_count_near_ties = on;
}

int64_t near_tie_count() {
  return g_near_ties;
}

void count_near_ties(const Tensor& scores, const Tensor* valid_len, int64_t k) {
  if (!g_count_near_ties) return;
  int64_t ties = 0;
  for (int64_t r = 0; r < scores.size(0); ++r) {
    const int64_t n = valid_len != nullptr ? valid_len->data<int32_t>()[r] : scores.size(1);
    ties += is_near_tie(scores.data<float>() + r * scores.size(1), n, k);
  }
  g_near_ties += ties;
}

LightningIndexer::LightningIndexer(const IndexerDims& dims, Tensor key_cache, ThreadPool& pool)
    : dims_(dims), key_cache_(std::move(key_cache)), pool_(pool) {
  CTXPAR_CHECK(
      dims.num_heads >= 1 && dims.head_dim >= 1 && dims.topk >= 1 && dims.max_score_elements >= 1,
      "indexer dims must be positive: index_n_heads {}, index_head_dim {}, index_topk "
      "{}, max_score_elements {}",
      dims.num_heads, dims.head_dim, dims.topk, dims.max_score_elements);
  CTXPAR_CHECK(key_cache_.ndim() == 3 && key_cache_.size(2) == dims.head_dim,
               "indexer key cache {} must be [num_blocks, rows_per_block, {}]",
               key_cache_.describe(), dims.head_dim);
}

Tensor LightningIndexer::select(const AttentionMetadata& md, const Tensor& q, const Tensor& k,
                                const Tensor& weights) {
  write(md, k);
  return select_cached(md, q, weights);
}

void LightningIndexer::write(const AttentionMetadata& md, const Tensor& k) {
  const int64_t tokens = md.common.num_tokens;
  CTXPAR_CHECK(k.ndim() == 2 && k.size(0) == tokens && k.size(1) == dims_.head_dim,
               "indexer k {} must be [{}, {}]", k.describe(), tokens, dims_.head_dim);
  write_keys(md, k);
}

Tensor LightningIndexer::select_cached(const AttentionMetadata& md, const Tensor& q,
                                       const Tensor& weights) {
  const int64_t tokens = md.common.num_tokens;
  CTXPAR_CHECK(q.ndim() == 3 && q.size(0) == tokens && q.size(1) == dims_.num_heads &&
                   q.size(2) == dims_.head_dim,
               "indexer q {} must be [{}, {}, {}]", q.describe(), tokens, dims_.num_heads,
               dims_.head_dim);
  CTXPAR_CHECK(
      weights.ndim() == 2 && weights.size(0) == tokens && weights.size(1) == dims_.num_heads,
      "indexer weights {} must be [{}, {}]", weights.describe(), tokens, dims_.num_heads);
  Tensor selected = Tensor::empty({tokens, dims_.topk}, DType::kI32);
  select_topk(md, q, weights, selected);
  return selected;
}

void LightningIndexer::write_keys(const AttentionMetadata& md, const Tensor& k) {
  const CommonAttentionMetadata& c = md.common;
  CTXPAR_CHECK(key_cache_.size(1) == md.layout.tokens_per_virtual_block(),
               "the replicated indexer cache {} needs B·N = {} rows per block (every rank keeps "
               "every token of a virtual block)",
               key_cache_.describe(), md.layout.tokens_per_virtual_block());
  // Row of each token: block_table[p / (B·N)]·(B·N) + p % (B·N), the same on every rank.
  Tensor slots = Tensor::empty({c.num_tokens}, DType::kI64);
  const int64_t max_blocks = c.block_tables.size(1);
  for (int64_t t = 0; t < c.num_tokens; ++t) {
    const int64_t req = c.token_req.data<int32_t>()[t];
    const std::span<const int32_t> table(c.block_tables.data<int32_t>() + req * max_blocks,
                                         static_cast<size_t>(max_blocks));
    slots.data<int64_t>()[t] = md.layout.replicated_slot(c.positions.data<int64_t>()[t], table);
  }
  kernels::write_cache_rows(k, slots, key_cache_);
}

void LightningIndexer::select_topk(const AttentionMetadata& md, const Tensor& q,
                                   const Tensor& weights, Tensor& selected) {
  // Key index = global position here, so the picked columns are the answer.
  const CommonAttentionMetadata& c = md.common;
  Tensor key_lens = Tensor::empty({c.num_tokens}, DType::kI32);
  for (int64_t t = 0; t < c.num_tokens; ++t) {
    key_lens.data<int32_t>()[t] = static_cast<int32_t>(c.positions.data<int64_t>()[t] + 1);
  }
  score_and_pick(md, q, weights, key_lens, selected, nullptr);
}

void LightningIndexer::score_and_pick(const AttentionMetadata& md, const Tensor& q,
                                      const Tensor& weights, const Tensor& key_lens,
                                      Tensor& columns, Tensor* values) {
  const CommonAttentionMetadata& c = md.common;
  const int32_t* lens = key_lens.data<int32_t>();
  for (int64_t first = 0; first < c.num_tokens;) {
    // Grow the chunk while [tokens, longest key range] stays within the budget.
    int64_t last = first + 1, longest = std::max<int32_t>(lens[first], 1);
    while (last < c.num_tokens && (last + 1 - first) * std::max<int64_t>(longest, lens[last]) <=
                                      dims_.max_score_elements) {
      longest = std::max<int64_t>(longest, lens[last]);
      ++last;
    }
    Tensor scores = Tensor::empty({last - first, longest}, DType::kF32);
    const Tensor chunk_lens = key_lens.slice(0, first, last);
    kernels::indexer_scores(q.slice(0, first, last), weights.slice(0, first, last), key_cache_,
                            c.block_tables, c.token_req.slice(0, first, last), chunk_lens, scores,
                            pool_);
    // Top-k row by row (O(keys) each) on the pool: a long prefill chunk has many rows.
    pool_.parallel_for(last - first, 8, [&](int64_t b, int64_t e, int) {
      const Tensor lens_part = chunk_lens.slice(0, b, e);
      Tensor columns_part = columns.slice(0, first + b, first + e);
      Tensor values_part;
      if (values != nullptr) values_part = values->slice(0, first + b, first + e);
      kernels::topk(scores.slice(0, b, e), dims_.topk, &lens_part, columns_part,
                    values != nullptr ? &values_part : nullptr);
      count_near_ties(scores.slice(0, b, e), &lens_part, dims_.topk);
    });
    first = last;
  }
}

}  // namespace ctxpar::attention
