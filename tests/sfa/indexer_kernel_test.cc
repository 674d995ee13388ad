// The indexer score kernel against its double-precision reference (every ISA, f32 and bf16
// keys, odd head counts and dims, ragged key ranges), its placement-independent bits, and
// the top-k it feeds, ties included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <set>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/indexer.h"
#include "ctxpar/kernels/topk.h"
#include "sfa_test_util.h"

namespace ctxpar::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// A batch of query tokens over a paged key cache: requests with random lengths and
// randomly numbered blocks of R rows.
struct Batch {
  Tensor q, w, cache, tables, token_req, key_lens;
  int64_t columns = 0;
};

class IndexerKernelTest : public sfa_test::SeededTest {
 protected:
  Batch make_batch(int64_t heads, int64_t dim, int64_t rows_per_block, DType dtype,
                   int64_t num_reqs, int64_t max_len) {
    Batch b;
    std::vector<int64_t> lens;
    int64_t blocks_needed = 0, max_blocks = 1;
    for (int64_t r = 0; r < num_reqs; ++r) {
      lens.push_back(uniform_int(1, max_len));
      const int64_t blocks = (lens.back() + rows_per_block - 1) / rows_per_block;
      blocks_needed += blocks;
      max_blocks = std::max(max_blocks, blocks);
    }
    const int64_t num_blocks = blocks_needed + 3;
    std::vector<int32_t> ids(static_cast<size_t>(num_blocks));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng());
    b.tables = Tensor::empty({num_reqs, max_blocks}, DType::kI32);
    b.tables.fill(-1);
    size_t next = 0;
    std::vector<int64_t> req_of, len_of;
    for (int64_t r = 0; r < num_reqs; ++r) {
      const int64_t blocks = (lens[r] + rows_per_block - 1) / rows_per_block;
      for (int64_t j = 0; j < blocks; ++j)
        b.tables.data<int32_t>()[r * max_blocks + j] = ids[next++];
      // A few query tokens per request, each with its own key range (0 allowed).
      for (int64_t t = uniform_int(1, 3); t > 0; --t) {
        req_of.push_back(r);
        len_of.push_back(uniform_int(0, 4) == 0 ? 0 : uniform_int(1, lens[r]));
      }
    }
    const auto tokens = static_cast<int64_t>(req_of.size());
    b.q = random({tokens, heads, dim});
    b.w = random({tokens, heads});
    b.cache = random({num_blocks, rows_per_block, dim}).to(dtype);
    b.token_req = Tensor::empty({tokens}, DType::kI32);
    b.key_lens = Tensor::empty({tokens}, DType::kI32);
    for (int64_t t = 0; t < tokens; ++t) {
      b.token_req.data<int32_t>()[t] = static_cast<int32_t>(req_of[t]);
      b.key_lens.data<int32_t>()[t] = static_cast<int32_t>(len_of[t]);
      b.columns = std::max(b.columns, len_of[t]);
    }
    b.columns += uniform_int(0, 3);  // room past the longest range: must read -inf
    return b;
  }

  Tensor scores_of(const Batch& b, Isa isa, int threads) {
    Tensor scores = Tensor::empty({b.q.size(0), b.columns}, DType::kF32);
    scores.fill_bytes(0xff);  // poison: every element must be written
    ThreadPool pool(threads);
    indexer_scores(b.q, b.w, b.cache, b.tables, b.token_req, b.key_lens, scores, pool, isa);
    return scores;
  }

  // Σ_h |w|·Σ_e |q·k|: the scale of the rounding error of one score.
  double magnitude(const Batch& b, int64_t t, int64_t s) const {
    const int64_t rpb = b.cache.size(1);
    const int64_t req = b.token_req.data<int32_t>()[t];
    const int64_t block = b.tables.data<int32_t>()[req * b.tables.size(1) + s / rpb];
    double m = 0;
    for (int64_t h = 0; h < b.q.size(1); ++h) {
      double dot = 0;
      for (int64_t e = 0; e < b.q.size(2); ++e)
        dot +=
            std::abs(b.q.item_as_double({t, h, e}) * b.cache.item_as_double({block, s % rpb, e}));
      m += std::abs(b.w.item_as_double({t, h})) * dot;
    }
    return m;
  }
};

TEST_F(IndexerKernelTest, MatchesDoubleReferenceOnEveryIsaAndShape) {
  struct Shape {
    int64_t heads, dim, rows_per_block;
  };
  for (const Shape& sh : {Shape{1, 5, 1}, Shape{3, 17, 4}, Shape{4, 32, 16}, Shape{6, 37, 48},
                          Shape{8, 64, 64}, Shape{5, 128, 3}}) {
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      SCOPED_TRACE(
          fmt::format("H={} D={} R={} {}", sh.heads, sh.dim, sh.rows_per_block, dtype_name(dtype)));
      const Batch b = make_batch(sh.heads, sh.dim, sh.rows_per_block, dtype, 3, 300);
      Tensor ref = Tensor::empty({b.q.size(0), b.columns}, DType::kF32);
      indexer_scores_reference(b.q, b.w, b.cache, b.tables, b.token_req, b.key_lens, ref);
      for (Isa isa : sfa_test::available_isas()) {
        SCOPED_TRACE(std::string(isa_name(isa)));
        const Tensor got = scores_of(b, isa, 1 + static_cast<int>(uniform_int(0, 2)));
        for (int64_t t = 0; t < got.size(0); ++t) {
          const int64_t len = b.key_lens.data<int32_t>()[t];
          for (int64_t s = 0; s < b.columns; ++s) {
            const float g = got.data<float>()[t * b.columns + s];
            if (s >= len) {
              ASSERT_EQ(g, -kInf) << "t " << t << " s " << s << " beyond " << len;
              continue;
            }
            const double r = ref.data<float>()[t * b.columns + s];
            ASSERT_NEAR(g, r, 1e-5 * magnitude(b, t, s) + 1e-30) << "t " << t << " s " << s;
          }
        }
      }
    }
  }
}

TEST_F(IndexerKernelTest, ScoreBitsDoNotDependOnWhereTheKeySits) {
  // The same keys in two caches of different block sizes and orders, scored in pairs or
  // alone, must give identical bits: the sharded indexer mode depends on it.
  const int64_t heads = 1 + uniform_int(0, 6), dim = 1 + uniform_int(0, 70), n = 61;
  const Tensor keys = random({n, dim});
  const Tensor q = random({1, heads, dim}), w = random({1, heads});
  for (Isa isa : sfa_test::available_isas()) {
    SCOPED_TRACE(std::string(isa_name(isa)));
    std::vector<Tensor> results;
    for (int64_t rpb : {int64_t{1}, int64_t{4}, int64_t{7}, n}) {
      const int64_t blocks = (n + rpb - 1) / rpb;
      Tensor cache = Tensor::zeros({blocks, rpb, dim}, DType::kF32);
      Tensor table = Tensor::empty({1, blocks}, DType::kI32);
      for (int64_t j = 0; j < blocks; ++j)
        table.data<int32_t>()[j] = static_cast<int32_t>(blocks - 1 - j);
      for (int64_t s = 0; s < n; ++s)
        cache.select(0, blocks - 1 - s / rpb).select(0, s % rpb).copy_from(keys.select(0, s));
      for (int64_t len : {n, n - 1, int64_t{1}}) {
        Batch b{
            q, w, cache, table, Tensor::zeros({1}, DType::kI32), Tensor::empty({1}, DType::kI32),
            n};
        b.key_lens.data<int32_t>()[0] = static_cast<int32_t>(len);
        const Tensor s = scores_of(b, isa, 2);
        results.push_back(s.select(0, 0).slice(0, 0, 1).clone());  // key 0, scored every way
        if (len == n) results.push_back(s.select(0, 0).clone());
      }
    }
    for (const Tensor& r : results) {
      const Tensor& same = r.numel() == 1 ? results[0] : results[1];
      ASSERT_EQ(std::memcmp(r.raw(), same.raw(), r.nbytes()), 0)
          << "a key's score changed with its place in the cache";
    }
  }
}

TEST_F(IndexerKernelTest, TopkOfScoresMatchesDoubleReferenceUpToRounding) {
  const Batch b = make_batch(4, 24, 16, DType::kF32, 4, 200);
  const int64_t k = uniform_int(1, 40);
  Tensor ref = Tensor::empty({b.q.size(0), b.columns}, DType::kF32);
  indexer_scores_reference(b.q, b.w, b.cache, b.tables, b.token_req, b.key_lens, ref);
  const Tensor got = scores_of(b, active_isa(), 2);
  Tensor picked = Tensor::empty({b.q.size(0), k}, DType::kI32);
  topk(got, k, &b.key_lens, picked, nullptr);
  for (int64_t t = 0; t < got.size(0); ++t) {
    const int64_t len = b.key_lens.data<int32_t>()[t];
    std::set<int32_t> chosen;
    for (int64_t j = 0; j < k; ++j) {
      const int32_t c = picked.data<int32_t>()[t * k + j];
      if (j < std::min(k, len)) {
        ASSERT_GE(c, 0);
        ASSERT_LT(c, len);
        chosen.insert(c);
      } else {
        ASSERT_EQ(c, -1);
      }
    }
    ASSERT_EQ(static_cast<int64_t>(chosen.size()), std::min(k, len)) << "duplicates";
    // Every chosen key scores at least every other one, up to the rounding of both.
    for (int32_t c : chosen) {
      for (int64_t s = 0; s < len; ++s) {
        if (chosen.count(static_cast<int32_t>(s))) continue;
        const double tol = 2e-5 * (magnitude(b, t, c) + magnitude(b, t, s));
        ASSERT_GE(ref.data<float>()[t * b.columns + c] + tol, ref.data<float>()[t * b.columns + s])
            << "token " << t << " chose " << c << " over " << s;
      }
    }
  }
}

TEST_F(IndexerKernelTest, TiedScoresGoToTheLowerPosition) {
  // Keys drawn from 3 distinct vectors: scores tie in large groups; the top-k must take each
  // tied group in position order, exactly as topk_reference does on the same bits.
  const int64_t heads = 3, dim = 9, n = 50, rpb = 8, k = 20;
  const Tensor distinct = random({3, dim});
  const int64_t blocks = (n + rpb - 1) / rpb;
  Tensor cache = Tensor::empty({blocks, rpb, dim}, DType::kF32);
  std::vector<int64_t> kind(n);
  for (int64_t s = 0; s < n; ++s) {
    kind[s] = uniform_int(0, 2);
    cache.select(0, s / rpb).select(0, s % rpb).copy_from(distinct.select(0, kind[s]));
  }
  Tensor table = Tensor::empty({1, blocks}, DType::kI32);
  std::iota(table.data<int32_t>(), table.data<int32_t>() + blocks, 0);
  Batch b{random({1, heads, dim}),
          random({1, heads}),
          cache,
          table,
          Tensor::zeros({1}, DType::kI32),
          Tensor::empty({1}, DType::kI32),
          n};
  b.key_lens.data<int32_t>()[0] = static_cast<int32_t>(n);
  const Tensor s = scores_of(b, active_isa(), 2);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j)
      if (kind[i] == kind[j]) {
        ASSERT_EQ(s.data<float>()[i], s.data<float>()[j]);
      }
  Tensor picked = Tensor::empty({1, k}, DType::kI32), want = Tensor::empty({1, k}, DType::kI32);
  topk(s, k, &b.key_lens, picked, nullptr);
  topk_reference(s, k, &b.key_lens, want, nullptr);
  ASSERT_EQ(std::memcmp(picked.raw(), want.raw(), picked.nbytes()), 0);
  // And explicitly: within one score, ascending positions.
  for (int64_t j = 1; j < k; ++j) {
    const int32_t a = picked.data<int32_t>()[j - 1], c = picked.data<int32_t>()[j];
    if (s.data<float>()[a] == s.data<float>()[c]) {
      ASSERT_LT(a, c);
    }
  }
}

TEST_F(IndexerKernelTest, RejectsBadArgumentsNamingThem) {
  Batch b = make_batch(2, 8, 4, DType::kF32, 2, 20);
  ThreadPool pool(1);
  // At least one column: a batch whose tokens all have 0 keys may draw none, and the
  // 1-key ranges below must pass the column check to reach the block-id one.
  const int64_t columns = std::max<int64_t>(b.columns, 1);
  Tensor scores = Tensor::empty({b.q.size(0), columns}, DType::kF32);
  Tensor lens = b.key_lens.clone();
  lens.data<int32_t>()[0] = static_cast<int32_t>(columns + 1);
  EXPECT_THROW(indexer_scores(b.q, b.w, b.cache, b.tables, b.token_req, lens, scores, pool), Error);
  Tensor tables = b.tables.clone();
  tables.data<int32_t>()[0] = static_cast<int32_t>(b.cache.size(0));
  lens.fill(1);
  try {
    indexer_scores(b.q, b.w, b.cache, tables, b.token_req, lens, scores, pool);
    ADD_FAILURE() << "a block id past the cache was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("valid block ids"), std::string::npos) << e.what();
  }
  const Tensor bad_w = random({b.q.size(0), 3});
  EXPECT_THROW(indexer_scores(b.q, bad_w, b.cache, b.tables, b.token_req, b.key_lens, scores, pool),
               Error);
}

}  // namespace
}  // namespace ctxpar::kernels
