// MLA (one latent head, values = the first kv_lora dims of each row) and index-selected
// attention, dense-cache and MLA forms, against the double-precision reference.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "attention_test_util.h"
#include "ctxpar/core/error.h"
#include "ctxpar/core/thread_pool.h"
#include "ctxpar/kernels/attention.h"

namespace ctxpar::kernels::testing {
namespace {

constexpr int64_t kLora = 512, kRope = 64, kWidth = kLora + kRope;

class MlaAndSelectedTest : public SeededTest {
 protected:
  // One decode token per request plus, sometimes, a second one with fewer keys.
  void tokens_for(const PagedSetup& s, std::vector<int32_t>& reqs, std::vector<int32_t>& lens) {
    for (size_t r = 0; r < s.req_lens.size(); ++r) {
      reqs.push_back(static_cast<int32_t>(r));
      lens.push_back(static_cast<int32_t>(s.req_lens[r]));
      if (coin()) {
        reqs.push_back(static_cast<int32_t>(r));
        lens.push_back(static_cast<int32_t>(uniform_int(0, s.req_lens[r])));
      }
    }
  }

  // The latent cache as the dense form's view, its values replaced by their magnitudes (for
  // the reference over |v| of expect_attention_close).
  static PagedKvView abs_value_view(const Tensor& latent) {
    return {latent.unsqueeze(2), abs_values(latent).slice(2, 0, kLora).unsqueeze(2)};
  }

  // indices [tokens, max_sel]: a random subset of each token's request keys, -1 holes at
  // random places, and a few tokens with nothing selected at all.
  Tensor random_indices(const PagedSetup& s, const std::vector<int32_t>& reqs, int64_t max_sel) {
    const int64_t tokens = static_cast<int64_t>(reqs.size());
    Tensor idx = Tensor::empty({tokens, max_sel}, DType::kI32);
    int32_t* p = idx.data<int32_t>();
    for (int64_t t = 0; t < tokens; ++t) {
      const int64_t len = s.req_lens[reqs[t]];
      const bool none = len == 0 || uniform_int(0, 4) == 0;
      for (int64_t j = 0; j < max_sel; ++j) {
        const bool hole = none || uniform_int(0, 3) == 0;
        p[t * max_sel + j] = hole ? -1 : static_cast<int32_t>(uniform_int(0, len - 1));
      }
    }
    return idx;
  }

  ThreadPool pool1_{1};
  ThreadPool pool3_{3};
};

TEST_F(MlaAndSelectedTest, MlaMatchesReference) {
  // 16 heads (DeepSeek decode per rank), 8 (DeepSeek-V2-Lite at TP 2: the AMX kernel's
  // smallest row group), 1 and an odd count, and 80 (> one job's rows, so a token's heads are split
  // into several jobs that each read the rows).
  for (int64_t heads : {16, 8, 1, 5, 80}) {
    for (int64_t block : {1, 16, 64}) {
      for (DType dtype : {DType::kF32, DType::kBF16, DType::kF8E4M3}) {
        SCOPED_TRACE("heads " + std::to_string(heads) + ", B " + std::to_string(block) + ", " +
                     std::string(dtype_name(dtype)));
        std::vector<int64_t> lens{0, 1, block - 1, block + 1, uniform_int(2, 3 * block + 50)};
        if (heads == 16) lens.push_back(uniform_int(1500, 3000));
        std::shuffle(lens.begin(), lens.end(), rng_);
        const PagedSetup s = make_block_tables(rng_, block, lens);
        const Tensor latent =
            stored_as(normal({s.num_blocks, block, kWidth}), dtype, coin() ? 16 : 0);
        std::vector<int32_t> reqs, klens;
        tokens_for(s, reqs, klens);
        const int64_t tokens = static_cast<int64_t>(reqs.size());
        const Tensor q = normal({tokens, heads, kWidth}, uniform(0.3, 1.5));
        const float scale = static_cast<float>(1.0 / std::sqrt(192.0));
        Tensor out_ref = Tensor::empty({tokens, heads, kLora}, DType::kF32);
        Tensor lse_ref = Tensor::empty({tokens, heads}, DType::kF32);
        paged_mla_attention_reference(q, latent, kLora, s.block_tables, i32_tensor(reqs),
                                      i32_tensor(klens), scale, out_ref, lse_ref);
        Tensor abs_ref = Tensor::empty({tokens, heads, kLora}, DType::kF32);
        if (some_isa_rounds_weights(dtype)) {
          Tensor lse_abs = Tensor::empty({tokens, heads}, DType::kF32);
          paged_attention_reference(q, abs_value_view(latent), s.block_tables, i32_tensor(reqs),
                                    i32_tensor(klens), scale, abs_ref, lse_abs);
        }
        for (Isa isa : supported_isas()) {
          for (ThreadPool* pool : {&pool1_, &pool3_}) {
            SCOPED_TRACE(isa_trace(isa) + ", threads " + std::to_string(pool->num_threads()));
            Tensor out = poisoned_view({tokens, heads, kLora}, coin() ? 2 : 0);
            Tensor lse = poisoned_view({tokens, heads}, 0);
            paged_mla_attention(q, latent, kLora, s.block_tables, i32_tensor(reqs),
                                i32_tensor(klens), scale, out, lse, *pool, isa);
            expect_attention_close(out, lse, out_ref, lse_ref, 1e-5,
                                   attention_rounds_weights(isa, dtype) ? &abs_ref : nullptr);
          }
        }
      }
    }
  }
}

TEST_F(MlaAndSelectedTest, MlaSelectedWithHolesMatchesReference) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF8E4M3}) {
    for (int64_t block : {1, 64}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + ", B " + std::to_string(block));
      const PagedSetup s = make_block_tables(
          rng_, block, {uniform_int(500, 2000), 0, uniform_int(1, 100), block + 1});
      const Tensor latent = stored_as(normal({s.num_blocks, block, kWidth}), dtype, 0);
      std::vector<int32_t> reqs, unused;
      tokens_for(s, reqs, unused);
      const Tensor indices = random_indices(s, reqs, uniform_int(1, 700));
      const int64_t tokens = static_cast<int64_t>(reqs.size()), heads = 16;
      const Tensor q = normal({tokens, heads, kWidth});
      const float scale = 0.07f;
      Tensor out_ref = Tensor::empty({tokens, heads, kLora}, DType::kF32);
      Tensor lse_ref = Tensor::empty({tokens, heads}, DType::kF32);
      paged_mla_attention_selected_reference(q, latent, kLora, s.block_tables, i32_tensor(reqs),
                                             indices, scale, out_ref, lse_ref);
      Tensor abs_ref = Tensor::empty({tokens, heads, kLora}, DType::kF32);
      if (some_isa_rounds_weights(dtype)) {
        Tensor lse_abs = Tensor::empty({tokens, heads}, DType::kF32);
        paged_attention_selected_reference(q, abs_value_view(latent), s.block_tables,
                                           i32_tensor(reqs), indices, scale, abs_ref, lse_abs);
      }
      for (Isa isa : supported_isas()) {
        SCOPED_TRACE(isa_trace(isa));
        Tensor out = poisoned_view({tokens, heads, kLora}, 0);
        Tensor lse = poisoned_view({tokens, heads}, 0);
        paged_mla_attention_selected(q, latent, kLora, s.block_tables, i32_tensor(reqs), indices,
                                     scale, out, lse, pool3_, isa);
        expect_attention_close(out, lse, out_ref, lse_ref, 1e-5,
                               attention_rounds_weights(isa, dtype) ? &abs_ref : nullptr);
      }
    }
  }
}

TEST_F(MlaAndSelectedTest, GqaSelectedWithHolesAndAllMinusOne) {
  for (int64_t group : {1, 4, 8}) {
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF8E4M3}) {
      SCOPED_TRACE("group " + std::to_string(group) + ", " + std::string(dtype_name(dtype)));
      const int64_t block = 16, d = 128, hkv = 2;
      const PagedSetup s = make_block_tables(rng_, block, {uniform_int(300, 1200), 15, 17, 1, 0});
      PagedKvView kv{stored_as(normal({s.num_blocks, block, hkv, d}), dtype, 0),
                     stored_as(normal({s.num_blocks, block, hkv, d}), dtype, 0)};
      std::vector<int32_t> reqs, unused;
      tokens_for(s, reqs, unused);
      const int64_t tokens = static_cast<int64_t>(reqs.size()), hq = group * hkv;
      Tensor indices = random_indices(s, reqs, uniform_int(1, 300));
      // The last token selects nothing at all.
      for (int64_t j = 0; j < indices.size(1); ++j)
        indices.data<int32_t>()[(tokens - 1) * indices.size(1) + j] = -1;
      const Tensor q = normal({tokens, hq, d}, 2.0);
      const float scale = static_cast<float>(1.0 / std::sqrt(d));
      Tensor out_ref = Tensor::empty({tokens, hq, d}, DType::kF32);
      Tensor lse_ref = Tensor::empty({tokens, hq}, DType::kF32);
      paged_attention_selected_reference(q, kv, s.block_tables, i32_tensor(reqs), indices, scale,
                                         out_ref, lse_ref);
      Tensor abs_ref = Tensor::empty({tokens, hq, d}, DType::kF32);
      if (some_isa_rounds_weights(dtype)) {
        Tensor lse_abs = Tensor::empty({tokens, hq}, DType::kF32);
        paged_attention_selected_reference(q, {kv.k_cache, abs_values(kv.v_cache)}, s.block_tables,
                                           i32_tensor(reqs), indices, scale, abs_ref, lse_abs);
      }
      for (int64_t h = 0; h < hq; ++h)
        EXPECT_EQ(lse_ref.item_as_double({tokens - 1, h}), -INFINITY);
      for (Isa isa : supported_isas()) {
        for (ThreadPool* pool : {&pool1_, &pool3_}) {
          SCOPED_TRACE(isa_trace(isa) + ", threads " + std::to_string(pool->num_threads()));
          Tensor out = poisoned_view({tokens, hq, d}, 1);
          Tensor lse = poisoned_view({tokens, hq}, 1);
          paged_attention_selected(q, kv, s.block_tables, i32_tensor(reqs), indices, scale, out,
                                   lse, *pool, isa);
          expect_attention_close(out, lse, out_ref, lse_ref, 1e-5,
                                 attention_rounds_weights(isa, dtype) ? &abs_ref : nullptr);
        }
      }
    }
  }
}

TEST_F(MlaAndSelectedTest, SelectedRejectsBadIndices) {
  const PagedSetup s = make_block_tables(rng_, 16, {20});
  const Tensor latent = normal({s.num_blocks, 16, kWidth});
  const Tensor q = normal({1, 4, kWidth});
  Tensor out = Tensor::empty({1, 4, kLora}, DType::kF32);
  Tensor lse = Tensor::empty({1, 4}, DType::kF32);
  const Tensor reqs = i32_tensor({0});
  const int32_t past = static_cast<int32_t>(s.block_tables.size(1) * 16);
  for (int32_t bad : {-2, past}) {
    Tensor idx = Tensor::empty({1, 3}, DType::kI32);
    idx.data<int32_t>()[0] = 3;
    idx.data<int32_t>()[1] = bad;
    idx.data<int32_t>()[2] = -1;
    EXPECT_THROW(paged_mla_attention_selected(q, latent, kLora, s.block_tables, reqs, idx, 1.f, out,
                                              lse, pool1_),
                 Error);
  }
  // kv_lora_rank wider than the latent row.
  EXPECT_THROW(paged_mla_attention(q, latent, kWidth + 1, s.block_tables, reqs, i32_tensor({20}),
                                   1.f, out, lse, pool1_),
               Error);
}

}  // namespace
}  // namespace ctxpar::kernels::testing
