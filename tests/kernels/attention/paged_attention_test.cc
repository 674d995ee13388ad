// Dense paged attention (GQA) against the double-precision reference, for every ISA variant
// the CPU runs, on one thread and with split-K across threads.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "attention_test_util.h"
#include "ctxpar/core/error.h"
#include "ctxpar/core/thread_pool.h"
#include "ctxpar/kernels/attention.h"

namespace ctxpar::kernels::testing {
namespace {

// Number of 32-bit words of a poisoned buffer that no longer hold the poison: an output
// written in full and nowhere else changes exactly the view's elements.
int64_t written_words(const Tensor& buffer) {
  const uint32_t* w = static_cast<const uint32_t*>(buffer.raw());
  int64_t n = 0;
  for (int64_t i = 0; i < buffer.numel(); ++i) n += w[i] != 0xffffffffu;
  return n;
}

class PagedAttentionTest : public SeededTest {
 protected:
  struct Batch {
    Tensor q;          // [tokens, hq, dk]
    Tensor token_req;  // [tokens]
    Tensor key_lens;   // [tokens]
  };

  // 1–3 query tokens per request; most see the request's whole local sequence, some a prefix
  // (tokens of one request with the same key count exercise the shared-key groups); the
  // order is shuffled half of the time.
  Batch make_batch(const PagedSetup& s, int64_t hq, int64_t dk, bool strided_q) {
    std::vector<int32_t> reqs, lens;
    for (size_t r = 0; r < s.req_lens.size(); ++r) {
      const int64_t count = uniform_int(1, 3);
      for (int64_t i = 0; i < count; ++i) {
        reqs.push_back(static_cast<int32_t>(r));
        const int64_t full = s.req_lens[r];
        lens.push_back(static_cast<int32_t>(uniform_int(0, 3) == 0 ? uniform_int(0, full) : full));
      }
    }
    if (coin()) {
      std::vector<size_t> perm(reqs.size());
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng_);
      std::vector<int32_t> r2, l2;
      for (size_t i : perm) {
        r2.push_back(reqs[i]);
        l2.push_back(lens[i]);
      }
      reqs.swap(r2);
      lens.swap(l2);
    }
    const int64_t tokens = static_cast<int64_t>(reqs.size());
    Batch b;
    // A temperature spreads the scores so the softmax is sometimes peaked, sometimes flat.
    b.q = normal({tokens, hq, dk}, uniform(0.5, 3.0));
    if (strided_q) b.q = stored_as(b.q, DType::kF32, 5);
    b.token_req = i32_tensor(reqs);
    b.key_lens = i32_tensor(lens);
    return b;
  }

  // A cache of random values for `s`, f32 truth and the copy in `dtype` (strided when asked).
  struct Cache {
    PagedKvView f32;
    PagedKvView stored;
  };
  Cache make_cache(const PagedSetup& s, int64_t hkv, int64_t dk, int64_t dv, DType dtype,
                   bool strided) {
    Cache c;
    c.f32.k_cache = normal({s.num_blocks, s.block_size, hkv, dk});
    c.f32.v_cache = normal({s.num_blocks, s.block_size, hkv, dv});
    // bf16 copies are rounded back to f32 so the "truth" and the stored cache differ only by
    // the test's own rounding, which the 1e-2 check below is about.
    c.stored.k_cache = stored_as(c.f32.k_cache, dtype, strided ? 8 : 0);
    c.stored.v_cache = stored_as(c.f32.v_cache, dtype, strided ? 4 : 0);
    return c;
  }

  // Fast kernel (every ISA, each pool) vs the reference on the same cache.
  void check(const PagedSetup& s, const PagedKvView& kv, const Batch& b, float scale, double tol) {
    const int64_t tokens = b.q.size(0), hq = b.q.size(1), dv = kv.v_cache.size(3);
    Tensor out_ref = Tensor::empty({tokens, hq, dv}, DType::kF32);
    Tensor lse_ref = Tensor::empty({tokens, hq}, DType::kF32);
    paged_attention_reference(b.q, kv, s.block_tables, b.token_req, b.key_lens, scale, out_ref,
                              lse_ref);
    const DType dtype = kv.v_cache.dtype();
    Tensor abs_ref = Tensor::empty({tokens, hq, dv}, DType::kF32);
    if (some_isa_rounds_weights(dtype)) {
      Tensor lse_abs = Tensor::empty({tokens, hq}, DType::kF32);
      paged_attention_reference(b.q, {kv.k_cache, abs_values(kv.v_cache)}, s.block_tables,
                                b.token_req, b.key_lens, scale, abs_ref, lse_abs);
    }
    for (Isa isa : supported_isas()) {
      Tensor unsplit;  // the one-thread result
      for (ThreadPool* pool : {&pool1_, &pool3_}) {
        SCOPED_TRACE(isa_trace(isa) + ", threads " + std::to_string(pool->num_threads()));
        Tensor out_buf, lse_buf;
        Tensor out = poisoned_view({tokens, hq, dv}, coin() ? 3 : 0, &out_buf);
        Tensor lse = poisoned_view({tokens, hq}, coin() ? 2 : 0, &lse_buf);
        paged_attention(b.q, kv, s.block_tables, b.token_req, b.key_lens, scale, out, lse, *pool,
                        isa);
        expect_attention_close(out, lse, out_ref, lse_ref, tol,
                               attention_rounds_weights(isa, dtype) ? &abs_ref : nullptr);
        EXPECT_EQ(written_words(out_buf), out.numel());
        EXPECT_EQ(written_words(lse_buf), lse.numel());
        // Keys split between threads and merged give the unsplit result to f32 rounding, also
        // where the weights are rounded to bf16 (their rounding does not depend on the split).
        if (!unsplit.defined()) {
          unsplit = out.clone();
        } else {
          EXPECT_LE(relative_error(out, unsplit), tol);
        }
      }
    }
  }

  ThreadPool pool1_{1};
  ThreadPool pool3_{3};
};

TEST_F(PagedAttentionTest, MatchesReferenceAcrossHeadDimsBlockSizesAndGroups) {
  for (int64_t d : {64, 128, 192}) {
    for (int64_t block : {1, 16, 64, 128}) {
      for (int64_t group : {1, 4, 8}) {
        for (DType dtype : {DType::kF32, DType::kBF16, DType::kF8E4M3}) {
          SCOPED_TRACE("d " + std::to_string(d) + ", B " + std::to_string(block) + ", group " +
                       std::to_string(group) + ", " + std::string(dtype_name(dtype)));
          // Key counts at the block edges, empty and one, and a random one.
          std::vector<int64_t> lens{0, 1, block - 1, block + 1, uniform_int(2, 2 * block + 40)};
          std::shuffle(lens.begin(), lens.end(), rng_);
          const PagedSetup s = make_block_tables(rng_, block, lens);
          const int64_t hkv = uniform_int(1, 2);
          const Cache c = make_cache(s, hkv, d, d, dtype, coin());
          const Batch b = make_batch(s, hkv * group, d, coin());
          check(s, c.stored, b, static_cast<float>(1.0 / std::sqrt(d)), 1e-5);
        }
      }
    }
  }
}

TEST_F(PagedAttentionTest, LongSequencesSplitAcrossThreads) {
  // A few thousand keys; one decode token per request, so with three threads the key range
  // of each KV head is split into chunks that are merged back.
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF8E4M3}) {
    for (int64_t block : {16, 128}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + ", B " + std::to_string(block));
      const PagedSetup s =
          make_block_tables(rng_, block, {uniform_int(2000, 5000), uniform_int(1, 300)});
      const int64_t d = 128, hkv = uniform_int(1, 2);
      const Cache c = make_cache(s, hkv, d, d, dtype, false);
      const Batch b = make_batch(s, 4 * hkv, d, false);
      check(s, c.stored, b, static_cast<float>(1.0 / std::sqrt(d)), 1e-5);
    }
  }
}

TEST_F(PagedAttentionTest, ShortDecodeSplitsBetweenKvHeads) {
  // One decode token is one group of all its KV heads. With three threads and too few keys to
  // cut into chunks the group is cut between its heads (unevenly where three does not divide
  // them); from a thousand keys on, between heads and along the keys both.
  for (int64_t hkv : {2, 3, 5, 8}) {
    for (int64_t keys :
         {int64_t{1}, uniform_int(2, 255), uniform_int(256, 700), uniform_int(1000, 2000)}) {
      const DType dtype =
          std::vector<DType>{DType::kF32, DType::kBF16, DType::kF8E4M3}[uniform_int(0, 2)];
      const int64_t d = coin() ? 64 : 128, group = coin() ? 1 : 4;
      SCOPED_TRACE("hkv " + std::to_string(hkv) + ", keys " + std::to_string(keys) + ", " +
                   std::string(dtype_name(dtype)) + ", d " + std::to_string(d) + ", group " +
                   std::to_string(group));
      const PagedSetup s = make_block_tables(rng_, 16, {keys});
      const Cache c = make_cache(s, hkv, d, d, dtype, coin());
      Batch b;
      b.q = normal({1, hkv * group, d}, uniform(0.5, 3.0));
      b.token_req = i32_tensor({0});
      b.key_lens = i32_tensor({static_cast<int32_t>(keys)});
      check(s, c.stored, b, static_cast<float>(1.0 / std::sqrt(d)), 1e-5);
    }
  }
}

TEST_F(PagedAttentionTest, Bf16CacheStaysCloseToF32Truth) {
  const int64_t block = 16, d = 128, hkv = 2;
  const PagedSetup s = make_block_tables(rng_, block, {uniform_int(100, 1500), 33, 7});
  const Cache c = make_cache(s, hkv, d, d, DType::kBF16, false);
  const Batch b = make_batch(s, 8, d, false);
  const float scale = static_cast<float>(1.0 / std::sqrt(d));
  const int64_t tokens = b.q.size(0);
  Tensor out_truth = Tensor::empty({tokens, 8, d}, DType::kF32);
  Tensor lse_truth = Tensor::empty({tokens, 8}, DType::kF32);
  paged_attention_reference(b.q, c.f32, s.block_tables, b.token_req, b.key_lens, scale, out_truth,
                            lse_truth);
  // How far rounding q and k to bf16 (2^-9 each, relative) can move a score, and so the lse:
  // 2^-8 · scale · max_j Σ_i |q_i|·|k_ji| over the row's keys, plus f32 summation noise. A
  // fixed 1e-2 was exceeded by hot queries (temperature up to 3) in 3% of the draws.
  Tensor lse_tol = Tensor::empty({tokens, 8}, DType::kF32);
  const int64_t table_stride = s.block_tables.size(1);
  for (int64_t t = 0; t < tokens; ++t) {
    const int64_t req = b.token_req.data<int32_t>()[t], keys = b.key_lens.data<int32_t>()[t];
    for (int64_t h = 0; h < 8; ++h) {
      const float* q = b.q.data<float>() + (t * 8 + h) * d;
      double most = 0;
      for (int64_t j = 0; j < keys; ++j) {
        const int64_t blk = s.block_tables.data<int32_t>()[req * table_stride + j / block];
        const float* k =
            c.f32.k_cache.data<float>() + ((blk * block + j % block) * hkv + h / 4) * d;
        double sum = 0;
        for (int64_t i = 0; i < d; ++i) sum += std::abs(static_cast<double>(q[i]) * k[i]);
        most = std::max(most, sum);
      }
      const double lse = std::abs(lse_truth.item_as_double({t, h}));
      lse_tol.data<float>()[t * 8 + h] = static_cast<float>(
          0x1p-8 * scale * most + 1e-5 * std::max(1.0, std::isfinite(lse) ? lse : 0.0));
    }
  }
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(isa_trace(isa));
    Tensor out = poisoned_view({tokens, 8, d}, 0);
    Tensor lse = poisoned_view({tokens, 8}, 0);
    paged_attention(b.q, c.stored, s.block_tables, b.token_req, b.key_lens, scale, out, lse, pool3_,
                    isa);
    expect_attention_close(out, lse, out_truth, lse_truth, 1e-2, nullptr, &lse_tol);
  }
}

TEST_F(PagedAttentionTest, EmptyBatchAndAllEmptyRows) {
  const PagedSetup s = make_block_tables(rng_, 16, {0, 0, 40});
  const Cache c = make_cache(s, 2, 64, 64, DType::kBF16, false);
  // No tokens at all.
  {
    Tensor q = Tensor::empty({0, 4, 64}, DType::kF32);
    Tensor out = Tensor::empty({0, 4, 64}, DType::kF32);
    Tensor lse = Tensor::empty({0, 4}, DType::kF32);
    for (Isa isa : supported_isas()) {
      paged_attention(q, c.stored, s.block_tables, i32_tensor({}), i32_tensor({}), 0.125f, out, lse,
                      pool3_, isa);
    }
  }
  // Every token sees zero keys: o = 0, lse = -inf, never NaN.
  Batch b;
  b.q = normal({3, 4, 64});
  b.token_req = i32_tensor({0, 1, 2});
  b.key_lens = i32_tensor({0, 0, 0});
  check(s, c.stored, b, 0.125f, 1e-5);
}

TEST_F(PagedAttentionTest, RejectsBadInputsWithMessages) {
  const PagedSetup s = make_block_tables(rng_, 16, {20, 5});
  const Cache c = make_cache(s, 2, 64, 64, DType::kF32, false);
  Tensor q = normal({2, 4, 64});
  Tensor out = Tensor::empty({2, 4, 64}, DType::kF32);
  Tensor lse = Tensor::empty({2, 4}, DType::kF32);
  const Tensor reqs = i32_tensor({0, 1});
  const Tensor lens = i32_tensor({20, 5});
  const auto message = [&](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // Heads not a multiple of the KV heads.
  Tensor q3 = normal({2, 3, 64});
  Tensor out3 = Tensor::empty({2, 3, 64}, DType::kF32);
  Tensor lse3 = Tensor::empty({2, 3}, DType::kF32);
  EXPECT_NE(message([&] {
              paged_attention(q3, c.stored, s.block_tables, reqs, lens, 1.f, out3, lse3, pool1_);
            }).find("multiple"),
            std::string::npos);
  // More keys than the block table can address.
  const Tensor too_long = i32_tensor({20, static_cast<int32_t>(s.block_tables.size(1) * 16 + 1)});
  EXPECT_NE(message([&] {
              paged_attention(q, c.stored, s.block_tables, reqs, too_long, 1.f, out, lse, pool1_);
            }).find("key_lens[1]"),
            std::string::npos);
  // A request index past the table.
  EXPECT_NE(message([&] {
              paged_attention(q, c.stored, s.block_tables, i32_tensor({0, 7}), lens, 1.f, out, lse,
                              pool1_);
            }).find("token_req[1] = 7"),
            std::string::npos);
  // A block id outside the cache.
  Tensor bad_table = s.block_tables.clone();
  bad_table.data<int32_t>()[0] = static_cast<int32_t>(s.num_blocks);
  EXPECT_NE(message([&] {
              paged_attention(q, c.stored, bad_table, reqs, lens, 1.f, out, lse, pool1_);
            }).find("block_tables[0][0]"),
            std::string::npos);
  // Mixed K/V dtypes, wrong output shape, non-finite scale.
  PagedKvView mixed{c.stored.k_cache, c.stored.v_cache.to(DType::kBF16)};
  EXPECT_THROW(paged_attention(q, mixed, s.block_tables, reqs, lens, 1.f, out, lse, pool1_), Error);
  Tensor wrong_out = Tensor::empty({2, 4, 32}, DType::kF32);
  EXPECT_THROW(
      paged_attention(q, c.stored, s.block_tables, reqs, lens, 1.f, wrong_out, lse, pool1_), Error);
  EXPECT_THROW(paged_attention(q, c.stored, s.block_tables, reqs, lens, NAN, out, lse, pool1_),
               Error);
  // The reference checks the same.
  EXPECT_THROW(paged_attention_reference(q3, c.stored, s.block_tables, reqs, lens, 1.f, out3, lse3),
               Error);
}

}  // namespace
}  // namespace ctxpar::kernels::testing
