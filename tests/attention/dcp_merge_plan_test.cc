// The two DCP merge plans against a serial merge of every rank's partial, including ranks
// whose shard is empty (lse = -inf) and groups whose size is not a power of two.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "attention_oracle.h"
#include "ctxpar/attention/context_parallel/dcp_attention_mixin.h"
#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/core/error.h"
#include "ctxpar/kernels/merge.h"
#include "support/seeded_rng.h"

namespace ctxpar::attention {
namespace {

class MixinUnderTest : public DcpAttentionMixin {
 public:
  using DcpAttentionMixin::DcpAttentionMixin;
  using DcpAttentionMixin::gather_heads;
  using DcpAttentionMixin::merge_across_group;
};

TEST(DcpMergePlans, BothPlansEqualTheSerialMerge) {
  const auto seed = test_support::test_seed();
  SCOPED_TRACE(seed);
  std::mt19937 rng(seed);
  for (int n : {1, 2, 3, 5, 6, 8}) {
    const int64_t tokens = 1 + rng() % 5, heads = 1 + rng() % 3, d = 1 + rng() % 9;
    // Rank r's partial for all N·H heads: [N][tokens, N·H, d] and lse [N][tokens, N·H].
    std::vector<Tensor> outs, lses;
    std::normal_distribution<float> g;
    for (int r = 0; r < n; ++r) {
      Tensor o = Tensor::empty({tokens, n * heads, d}, DType::kF32);
      Tensor l = Tensor::empty({tokens, n * heads}, DType::kF32);
      for (int64_t i = 0; i < o.numel(); ++i) o.data<float>()[i] = g(rng);
      for (int64_t i = 0; i < l.numel(); ++i) {
        // About a quarter of the (token, head) partials are empty shards.
        l.data<float>()[i] = rng() % 4 == 0 ? -INFINITY : 3.0f * g(rng);
        if (std::isinf(l.data<float>()[i])) {
          for (int64_t e = 0; e < d; ++e) o.data<float>()[(i * d) + e] = 0.0f;
        }
      }
      if (r == n - 1 && n > 1) l.fill(-INFINITY), o.fill(0.0);  // a rank with nothing
      outs.push_back(o);
      lses.push_back(l);
    }
    // |o| of every partial: merged like o, it gives Σ_s w_s·|o_s|, the scale of the merge's
    // rounding error. The result itself can cancel to near 0 (d is small), so an error
    // relative to it would fail on correct f32 arithmetic (seen at 4e-6 on AVX2).
    std::vector<Tensor> abs_outs;
    for (const Tensor& o : outs) {
      Tensor a = o.clone();
      for (int64_t i = 0; i < a.numel(); ++i) a.data<float>()[i] = std::fabs(a.data<float>()[i]);
      abs_outs.push_back(a);
    }
    // Serial expectation for rank r's heads (from `from`: outs or abs_outs).
    auto expected = [&](int r, const std::vector<Tensor>& from, Tensor& out, Tensor& lse) {
      Tensor all_o = Tensor::empty({n, tokens, heads, d}, DType::kF32);
      Tensor all_l = Tensor::empty({n, tokens, heads}, DType::kF32);
      for (int s = 0; s < n; ++s) {
        all_o.select(0, s).copy_from(from[s].slice(1, r * heads, (r + 1) * heads));
        all_l.select(0, s).copy_from(lses[s].slice(1, r * heads, (r + 1) * heads));
      }
      kernels::merge_partials_reference(all_o, all_l, out, lse);
    };
    for (DcpCommPlan plan : {DcpCommPlan::kAllGatherReduceScatter, DcpCommPlan::kAllToAll}) {
      SCOPED_TRACE(fmt::format("{} N={}", dcp_comm_plan_name(plan), n));
      run_inprocess_ranks(n, [&](Communicator& world) {
        const int r = world.rank();
        MixinUnderTest mixin(world, plan);
        Tensor partial = outs[r].clone();
        Tensor out = Tensor::empty({tokens, heads, d}, DType::kF32);
        Tensor lse = Tensor::empty({tokens, heads}, DType::kF32);
        out.fill_bytes(0xff);
        lse.fill_bytes(0xff);
        mixin.merge_across_group(partial, lses[r], out, lse);
        Tensor want = Tensor::empty({tokens, heads, d}, DType::kF32);
        Tensor want_lse = Tensor::empty({tokens, heads}, DType::kF32);
        Tensor scale = Tensor::empty({tokens, heads, d}, DType::kF32);
        Tensor scale_lse = Tensor::empty({tokens, heads}, DType::kF32);
        expected(r, outs, want, want_lse);
        expected(r, abs_outs, scale, scale_lse);
        // N products and N - 1 sums in f32, each weight and the reference rounded once to f32:
        // under (N + 2) ulps of the scale.
        const double tol = (n + 2) * std::numeric_limits<float>::epsilon();
        for (int64_t i = 0; i < out.numel(); ++i) {
          const double a = out.data<float>()[i], b = want.data<float>()[i];
          EXPECT_LE(std::fabs(a - b), tol * (scale.data<float>()[i] + 1e-30)) << "element " << i;
        }
        for (int64_t i = 0; i < lse.numel(); ++i) {
          const float a = lse.data<float>()[i], b = want_lse.data<float>()[i];
          if (std::isinf(b)) {
            EXPECT_TRUE(std::isinf(a) && a < 0) << a;
          } else {
            EXPECT_NEAR(a, b, 1e-5 * (1 + std::fabs(b)));
          }
        }
      });
    }
  }
}

TEST(DcpMergePlans, GatherHeadsIsRankMajor) {
  run_inprocess_ranks(3, [](Communicator& world) {
    MixinUnderTest mixin(world, DcpCommPlan::kAllToAll);
    Tensor x = Tensor::empty({2, 2, 3}, DType::kF32);
    x.fill(world.rank());
    const Tensor all = mixin.gather_heads(x);
    ASSERT_EQ(all.shape(), (Shape{2, 6, 3}));
    for (int64_t h = 0; h < 6; ++h) EXPECT_EQ(all.item_as_double({1, h, 2}), h / 2);
  });
}

TEST(DcpMergePlans, UnknownPlanNameIsRejected) {
  EXPECT_EQ(parse_dcp_comm_plan("a2a"), DcpCommPlan::kAllToAll);
  EXPECT_EQ(parse_dcp_comm_plan("ag_rs"), DcpCommPlan::kAllGatherReduceScatter);
  EXPECT_THROW(parse_dcp_comm_plan("allgather"), Error);
}

}  // namespace
}  // namespace ctxpar::attention
