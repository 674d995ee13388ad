// LightningIndexer on its own: the keys land at their replicated rows, the selection is the
// kernel's top-k over each token's causal key range, and scoring a long batch a chunk of tokens
// at a time (a small score budget) selects exactly the same keys.
#include "ctxpar/attention/lightning_indexer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <tuple>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/indexer.h"
#include "ctxpar/kernels/topk.h"
#include "sfa_test_util.h"

namespace ctxpar::attention {
namespace {

class LightningIndexerTest : public sfa_test::SeededTest {};

TEST_F(LightningIndexerTest, ChunkedScoringSelectsTheSameKeysAsOnePass) {
  const int64_t block = 1 + uniform_int(0, 7), heads = 1 + uniform_int(0, 5),
                dim = 4 + uniform_int(0, 12);
  // Requests: a decode with a long context, prefill chunks with and without context.
  std::vector<ScheduledRequest> requests;
  int32_t next_block = 0;
  for (const auto& [computed, scheduled] : {std::pair<int64_t, int64_t>{uniform_int(20, 60), 1},
                                            {0, uniform_int(5, 40)},
                                            {uniform_int(1, 30), uniform_int(2, 30)}}) {
    ScheduledRequest r;
    r.num_computed = computed;
    r.num_scheduled = scheduled;
    const int64_t blocks = (computed + scheduled + block - 1) / block;
    for (int64_t b = 0; b < blocks; ++b) r.block_table.push_back(next_block++);
    requests.push_back(std::move(r));
  }
  const AttentionMetadataBuilder builder(static_cast<int>(block));
  const AttentionMetadata step = builder.build(requests);
  const int64_t tokens = step.common.num_tokens;

  // Earlier keys of every request, written by a first pass over the same cache.
  const Tensor cache = Tensor::zeros({next_block, block, dim}, DType::kF32);
  std::vector<ScheduledRequest> history;
  for (const ScheduledRequest& r : requests) {
    if (r.num_computed == 0) continue;
    ScheduledRequest h = r;
    h.num_scheduled = h.num_computed;
    h.num_computed = 0;
    history.push_back(h);
  }
  const AttentionMetadata before = builder.build(history);
  const int64_t topk = 1 + uniform_int(0, 20);
  ThreadPool pool(2);
  const auto random_inputs = [&](int64_t n) {
    return std::tuple{random({n, heads, dim}), random({n, dim}), random({n, heads})};
  };
  const auto [hq, hk, hw] = random_inputs(before.common.num_tokens);
  LightningIndexer one_pass({heads, dim, topk}, cache, pool);
  one_pass.select(before, hq, hk, hw);  // writes the contexts' keys

  const auto [q, k, w] = random_inputs(tokens);
  const Tensor want = one_pass.select(step, q, k, w);
  const int64_t budget = 1 + uniform_int(0, 80);
  SCOPED_TRACE(
      fmt::format("B={} H={} D={} topk={} score budget={}", block, heads, dim, topk, budget));
  LightningIndexer chunked({heads, dim, topk, budget}, cache, pool);
  const Tensor got = chunked.select(step, q, k, w);
  ASSERT_EQ(std::memcmp(got.raw(), want.raw(), got.nbytes()), 0);

  // The step's keys sit at block_table[p / B]·B + p % B (N = 1), and the selection is the
  // kernel's top-k over positions [0, p].
  int64_t longest = 0;
  Tensor key_lens = Tensor::empty({tokens}, DType::kI32);
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t p = step.common.positions.data<int64_t>()[t];
    const auto& table =
        requests[static_cast<size_t>(step.common.token_req.data<int32_t>()[t])].block_table;
    const int64_t row = table[static_cast<size_t>(p / block)] * block + p % block;
    ASSERT_EQ(std::memcmp(cache.data<float>() + row * dim, k.data<float>() + t * dim,
                          static_cast<size_t>(dim) * sizeof(float)),
              0)
        << "token " << t;
    key_lens.data<int32_t>()[t] = static_cast<int32_t>(p + 1);
    longest = std::max(longest, p + 1);
  }
  Tensor scores = Tensor::empty({tokens, longest}, DType::kF32);
  kernels::indexer_scores(q, w, cache, step.common.block_tables, step.common.token_req, key_lens,
                          scores, pool);
  Tensor direct = Tensor::empty({tokens, topk}, DType::kI32);
  kernels::topk(scores, topk, &key_lens, direct, nullptr);
  ASSERT_EQ(std::memcmp(direct.raw(), want.raw(), want.nbytes()), 0);
}

TEST_F(LightningIndexerTest, RejectsACacheShapedForAnotherLayout) {
  ThreadPool pool(1);
  const IndexerDims dims{2, 8, 4};
  EXPECT_THROW(LightningIndexer(dims, Tensor::zeros({4, 4, 7}, DType::kF32), pool), Error);
  EXPECT_THROW(LightningIndexer({0, 8, 4}, Tensor::zeros({4, 4, 8}, DType::kF32), pool), Error);
  // A replicated cache needs B·N rows per block; one of B rows is refused when N = 2.
  class DcpView : public AttentionMetadataBuilder {
   public:
    DcpView() : AttentionMetadataBuilder(kv::DcpLayout(2, 4, 1), 0) {}
  };
  ScheduledRequest r;
  r.num_scheduled = 3;
  r.block_table = {0};
  const std::vector<ScheduledRequest> batch{r};
  const AttentionMetadata md = DcpView().build(batch);
  LightningIndexer indexer(dims, Tensor::zeros({4, 4, 8}, DType::kF32), pool);
  EXPECT_THROW(indexer.select(md, random({3, 2, 8}), random({3, 8}), random({3, 2})), Error);
}

// count_near_ties counts a row when its k-th and (k+1)-th best lie within kNearTieTolerance of
// its largest |score|, and only while counting is on.
TEST_F(LightningIndexerTest, CountsNearTiesAtTheTopKBoundary) {
  const int64_t n = uniform_int(6, 40), k = uniform_int(1, n - 2);
  const float scale = static_cast<float>(uniform_int(1, 1000)) / 64;
  const float ninf = -std::numeric_limits<float>::infinity();
  // Distinct scores, well apart: i · scale / n, shuffled.
  std::vector<float> row(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) row[i] = static_cast<float>(i + 1) * scale / n;
  std::shuffle(row.begin(), row.end(), rng());
  std::vector<float> sorted = row;
  std::sort(sorted.begin(), sorted.end(), std::greater<float>());
  const float kth = sorted[k - 1], next = sorted[k], largest = sorted[0];
  // Row 0 as drawn; row 1 with its (k+1)-th moved to 0.5 tolerance of the k-th; row 2 to 2
  // tolerances; row 3 as row 1 but cut (valid_len) before the moved score; row 4 with every
  // score below the k-th -inf (no (k+1)-th candidate).
  Tensor scores = Tensor::empty({5, n}, DType::kF32);
  Tensor lens = Tensor::empty({5}, DType::kI32);
  for (int r = 0; r < 5; ++r) {
    lens.data<int32_t>()[r] = static_cast<int32_t>(n);
    for (int64_t i = 0; i < n; ++i) {
      float v = row[i];
      if (v == next && (r == 1 || r == 3)) v = kth - 0.5f * kNearTieTolerance * largest;
      if (v == next && r == 2) v = kth - 2.0f * kNearTieTolerance * largest;
      if (v < kth && r == 4) v = ninf;
      scores.data<float>()[r * n + i] = v;
    }
  }
  // Row 3's valid_len ends just before the moved score.
  int32_t& cut = lens.data<int32_t>()[3];
  cut = static_cast<int32_t>(std::find(row.begin(), row.end(), next) - row.begin());
  const auto count_row = [&](int r) {
    set_near_tie_counting(true);
    const Tensor rs = scores.slice(0, r, r + 1), ls = lens.slice(0, r, r + 1);
    count_near_ties(rs, &ls, k);
    return near_tie_count();
  };
  EXPECT_EQ(count_row(0), 0);
  EXPECT_EQ(count_row(1), 1);
  EXPECT_EQ(count_row(2), 0);
  EXPECT_EQ(count_row(3), 0) << "valid_len " << cut;
  EXPECT_EQ(count_row(4), 0);
  set_near_tie_counting(true);
  count_near_ties(scores, &lens, k);
  EXPECT_EQ(near_tie_count(), 1);
  // Exact ties of zeros (every head's ReLU at 0) count; counting off counts nothing.
  Tensor zeros = Tensor::zeros({2, n}, DType::kF32);
  count_near_ties(zeros, nullptr, k);
  EXPECT_EQ(near_tie_count(), 3);
  set_near_tie_counting(false);
  count_near_ties(scores, &lens, k);
  count_near_ties(zeros, nullptr, k);
  EXPECT_EQ(near_tie_count(), 0);
}

}  // namespace
}  // namespace ctxpar::attention
