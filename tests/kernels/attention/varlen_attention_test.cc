// Causal attention over this step's raw k/v, and non-causal varlen attention with separate
// query and key ranges, against the double-precision reference.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "attention_test_util.h"
#include "ctxpar/core/error.h"
#include "ctxpar/core/thread_pool.h"
#include "ctxpar/kernels/attention.h"

namespace ctxpar::kernels::testing {
namespace {

class VarlenAttentionTest : public SeededTest {
 protected:
  Tensor cu_of(const std::vector<int64_t>& lens) {
    std::vector<int32_t> cu{0};
    for (int64_t n : lens) cu.push_back(cu.back() + static_cast<int32_t>(n));
    return i32_tensor(cu);
  }

  ThreadPool pool1_{1};
  ThreadPool pool3_{3};
};

TEST_F(VarlenAttentionTest, CausalMatchesReference) {
  // (dk, dv): GQA heads and DeepSeek's expanded prefill form (qk 192, v 128).
  const std::vector<std::pair<int64_t, int64_t>> dims{{64, 64}, {128, 128}, {192, 128}};
  for (const auto& [dk, dv] : dims) {
    for (int64_t group : {1, 4, 8}) {
      for (DType dtype : {DType::kF32, DType::kBF16}) {
        SCOPED_TRACE("dk " + std::to_string(dk) + ", dv " + std::to_string(dv) + ", group " +
                     std::to_string(group) + ", " + std::string(dtype_name(dtype)));
        // Empty and one-token sequences, one longer than a job's token group, random ones.
        std::vector<int64_t> lens{0, 1, uniform_int(17, 90), uniform_int(2, 40)};
        std::shuffle(lens.begin(), lens.end(), rng_);
        int64_t tokens = 0;
        for (int64_t n : lens) tokens += n;
        const int64_t hkv = uniform_int(1, 3), hq = hkv * group;
        const Tensor q =
            stored_as(normal({tokens, hq, dk}, uniform(0.5, 3.0)), DType::kF32, coin() ? 3 : 0);
        const Tensor k = stored_as(normal({tokens, hkv, dk}), dtype, coin() ? 5 : 0);
        const Tensor v = stored_as(normal({tokens, hkv, dv}), dtype, coin() ? 2 : 0);
        const Tensor cu = cu_of(lens);
        const float scale = static_cast<float>(1.0 / std::sqrt(dk));
        Tensor out_ref = Tensor::empty({tokens, hq, dv}, DType::kF32);
        Tensor lse_ref = Tensor::empty({tokens, hq}, DType::kF32);
        causal_attention_reference(q, k, v, cu, scale, out_ref, lse_ref);
        Tensor abs_ref = Tensor::empty({tokens, hq, dv}, DType::kF32);
        if (some_isa_rounds_weights(dtype)) {
          Tensor lse_abs = Tensor::empty({tokens, hq}, DType::kF32);
          causal_attention_reference(q, k, abs_values(v), cu, scale, abs_ref, lse_abs);
        }
        for (Isa isa : supported_isas()) {
          for (ThreadPool* pool : {&pool1_, &pool3_}) {
            SCOPED_TRACE(isa_trace(isa) + ", threads " + std::to_string(pool->num_threads()));
            Tensor out = poisoned_view({tokens, hq, dv}, coin() ? 4 : 0);
            Tensor lse = poisoned_view({tokens, hq}, coin() ? 1 : 0);
            causal_attention(q, k, v, cu, scale, out, lse, *pool, isa);
            expect_attention_close(out, lse, out_ref, lse_ref, 1e-5,
                                   attention_rounds_weights(isa, dtype) ? &abs_ref : nullptr);
          }
        }
      }
    }
  }
}

TEST_F(VarlenAttentionTest, CausalLongSequence) {
  // One long sequence; every row is compared, so a wrong mask at any key tile, token group
  // or split-K chunk boundary shows.
  const int64_t tokens = uniform_int(700, 1200), hkv = 1, hq = 4, d = 64;
  const Tensor q = normal({tokens, hq, d});
  const Tensor k = normal({tokens, hkv, d});
  const Tensor v = normal({tokens, hkv, d});
  const Tensor cu = cu_of({tokens});
  Tensor out_ref = Tensor::empty({tokens, hq, d}, DType::kF32);
  Tensor lse_ref = Tensor::empty({tokens, hq}, DType::kF32);
  causal_attention_reference(q, k, v, cu, 0.125f, out_ref, lse_ref);
  for (Isa isa : supported_isas()) {
    SCOPED_TRACE(isa_trace(isa));
    Tensor out = poisoned_view({tokens, hq, d}, 0);
    Tensor lse = poisoned_view({tokens, hq}, 0);
    causal_attention(q, k, v, cu, 0.125f, out, lse, pool3_, isa);
    expect_attention_close(out, lse, out_ref, lse_ref, 1e-5);
  }
}

TEST_F(VarlenAttentionTest, NonCausalSeparateQueryAndKeyRanges) {
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (int64_t group : {1, 4, 8}) {
      SCOPED_TRACE("group " + std::to_string(group) + ", " + std::string(dtype_name(dtype)));
      // Sequences with no queries, no keys, one of each, and random (some long) ones.
      std::vector<int64_t> q_lens{0, 3, 1, uniform_int(1, 70), uniform_int(1, 5)};
      std::vector<int64_t> k_lens{5, 0, 1, uniform_int(1, 300), uniform_int(500, 2500)};
      int64_t qt = 0, kt = 0;
      for (int64_t n : q_lens) qt += n;
      for (int64_t n : k_lens) kt += n;
      const int64_t hkv = uniform_int(1, 2), hq = hkv * group, dk = 192, dv = 128;
      const Tensor q = normal({qt, hq, dk});
      const Tensor k = stored_as(normal({kt, hkv, dk}), dtype, coin() ? 8 : 0);
      const Tensor v = stored_as(normal({kt, hkv, dv}), dtype, 0);
      const Tensor q_cu = cu_of(q_lens), k_cu = cu_of(k_lens);
      const float scale = static_cast<float>(1.0 / std::sqrt(dk));
      Tensor out_ref = Tensor::empty({qt, hq, dv}, DType::kF32);
      Tensor lse_ref = Tensor::empty({qt, hq}, DType::kF32);
      varlen_attention_reference(q, k, v, q_cu, k_cu, scale, out_ref, lse_ref);
      Tensor abs_ref = Tensor::empty({qt, hq, dv}, DType::kF32);
      if (some_isa_rounds_weights(dtype)) {
        Tensor lse_abs = Tensor::empty({qt, hq}, DType::kF32);
        varlen_attention_reference(q, k, abs_values(v), q_cu, k_cu, scale, abs_ref, lse_abs);
      }
      for (Isa isa : supported_isas()) {
        for (ThreadPool* pool : {&pool1_, &pool3_}) {
          SCOPED_TRACE(isa_trace(isa) + ", threads " + std::to_string(pool->num_threads()));
          Tensor out = poisoned_view({qt, hq, dv}, 2);
          Tensor lse = poisoned_view({qt, hq}, 0);
          varlen_attention(q, k, v, q_cu, k_cu, scale, out, lse, *pool, isa);
          expect_attention_close(out, lse, out_ref, lse_ref, 1e-5,
                                 attention_rounds_weights(isa, dtype) ? &abs_ref : nullptr);
        }
      }
    }
  }
}

TEST_F(VarlenAttentionTest, RejectsBadSeqlens) {
  const Tensor q = normal({5, 2, 64}), k = normal({5, 1, 64}), v = normal({5, 1, 64});
  Tensor out = Tensor::empty({5, 2, 64}, DType::kF32);
  Tensor lse = Tensor::empty({5, 2}, DType::kF32);
  EXPECT_THROW(causal_attention(q, k, v, i32_tensor({0, 3}), 1.f, out, lse, pool1_), Error);
  EXPECT_THROW(causal_attention(q, k, v, i32_tensor({1, 5}), 1.f, out, lse, pool1_), Error);
  EXPECT_THROW(causal_attention(q, k, v, i32_tensor({0, 4, 3, 5}), 1.f, out, lse, pool1_), Error);
  const Tensor k4 = normal({4, 1, 64}), v4 = normal({4, 1, 64});
  EXPECT_THROW(causal_attention(q, k4, v4, i32_tensor({0, 5}), 1.f, out, lse, pool1_), Error);
  // Sequence counts of the two cu arrays differ.
  EXPECT_THROW(
      varlen_attention(q, k4, v4, i32_tensor({0, 5}), i32_tensor({0, 2, 4}), 1.f, out, lse, pool1_),
      Error);
}

}  // namespace
}  // namespace ctxpar::kernels::testing
