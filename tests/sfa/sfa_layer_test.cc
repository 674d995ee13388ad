// The sparse-attention layer (Lightning Indexer + sparse MLA) on random weights over chunked
// prefill, decode-only and mixed steps:
//  - with index_topk >= every sequence length it equals the dense MLA layer (1e-5, f32);
//  - with a small index_topk its selection is a top-k of the double-precision indexer scores
//    and its outputs match the double reference attending those keys;
//  - under DCP (N = T in {2, 3, 4, 8}, I in {1, 2, B}, B in {1, 16, 64}, both indexer modes,
//    both merge plans) its selections equal N = 1 exactly and its outputs within 1e-5 (f32)
//    or 1e-2 (bf16 caches); the latent bytes per rank divide by N, the indexer bytes stay
//    (replicated) or divide by N (sharded).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "sfa_oracle.h"
#include "support/seeded_rng.h"

namespace ctxpar::sfa_test {
namespace {

struct Seeded {
  Seeded() : seed(test_support::test_seed()), rng(seed) {}
  uint32_t seed;
  std::mt19937 rng;
};

bool identical(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tol,
                  const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_LE(relative_error(got[i], want[i]), tol) << what << ", step " << i;
  }
}

TEST(SfaLayer, EqualsDenseMlaWhenTopkCoversTheContext) {
  Seeded s;
  SCOPED_TRACE(fmt::format("seed {}", s.seed));
  SfaShape shape;
  shape.index_topk = 48 + static_cast<int64_t>(s.rng() % 20);  // >= every length (<= 47)
  const SfaScenario scenario = make_sfa_scenario(shape, s.rng, 4, 40);
  const SfaReference reference(scenario);
  const std::vector<Tensor> exact = reference.outputs({});
  for (const auto& [tp, dcp] : {std::pair{1, 1}, std::pair{2, 2}, std::pair{4, 4}}) {
    SfaRunConfig cfg;
    cfg.tp = tp;
    cfg.dcp = dcp;
    cfg.block_size = 4;
    cfg.interleave = static_cast<int>(1 + s.rng() % 2);
    SCOPED_TRACE(fmt::format("T={} N={} I={}", tp, dcp, cfg.interleave));
    const SfaRunResult sparse = run_sfa_layer(scenario, cfg);
    cfg.dense = true;
    const SfaRunResult dense = run_sfa_layer(scenario, cfg);
    expect_close(sparse.outputs, dense.outputs, 1e-5, "SFA vs dense MLA");
    expect_close(sparse.outputs, exact, 1e-5, "SFA vs double dense reference");
  }
}

TEST(SfaLayer, SmallTopkSelectsTheDoubleTopkAndMatchesTheReference) {
  Seeded s;
  SCOPED_TRACE(fmt::format("seed {}", s.seed));
  SfaShape shape;
  shape.index_topk = 3 + static_cast<int64_t>(s.rng() % 8);
  shape.index_heads = 1 + static_cast<int64_t>(s.rng() % 6);
  const SfaScenario scenario = make_sfa_scenario(shape, s.rng, 4, 40);
  const SfaReference reference(scenario);
  SfaRunConfig cfg;
  cfg.block_size = 16;
  const SfaRunResult got = run_sfa_layer(scenario, cfg);
  const std::string bad = reference.check_selections(got.selections);
  ASSERT_TRUE(bad.empty()) << bad;
  expect_close(got.outputs, reference.outputs(got.selections), 1e-5, "SFA vs double reference");
  // The selection matters: attending every key gives a clearly different answer.
  cfg.dense = true;
  const SfaRunResult dense = run_sfa_layer(scenario, cfg);
  double largest = 0;
  for (size_t i = 0; i < got.outputs.size(); ++i) {
    largest = std::max(largest, relative_error(got.outputs[i], dense.outputs[i]));
  }
  EXPECT_GT(largest, 1e-2) << "index_topk " << shape.index_topk << " should drop keys";
}

class SfaDcp : public ::testing::TestWithParam<int> {};

TEST_P(SfaDcp, BothIndexerModesEqualSingleRankForEveryLayout) {
  const int n = GetParam();
  Seeded s;
  SCOPED_TRACE(fmt::format("seed {} N=T={}", s.seed, n));
  SfaShape shape;
  shape.num_heads = 2 * n;
  shape.kv_lora = 24 + static_cast<int64_t>(s.rng() % 2) * 8;
  shape.index_heads = 1 + static_cast<int64_t>(s.rng() % 5);
  shape.index_topk = 4 + static_cast<int64_t>(s.rng() % 8);  // contexts reach ~47
  const SfaScenario scenario = make_sfa_scenario(shape, s.rng, 4, 40);

  const std::vector<std::pair<int, int>> layouts = {{1, 1},  {1, 16}, {2, 16}, {16, 16},
                                                    {1, 64}, {2, 64}, {64, 64}};
  for (const auto& [interleave, block] : layouts) {
    SfaRunConfig single;
    single.block_size = block;
    single.interleave = interleave;
    const SfaRunResult want_f32 = run_sfa_layer(scenario, single);
    bool saw_decode_only = false, saw_prefill = false;
    for (bool d : want_f32.decode_only) (d ? saw_decode_only : saw_prefill) = true;
    ASSERT_TRUE(saw_decode_only && saw_prefill) << "the schedule must cover both DCP paths";
    for (auto mode :
         {attention::SfaIndexerMode::kReplicated, attention::SfaIndexerMode::kSharded}) {
      SfaRunConfig cfg = single;
      cfg.tp = n;
      cfg.dcp = n;
      cfg.indexer_mode = mode;
      cfg.plan = s.rng() % 2 ? attention::DcpCommPlan::kAllToAll
                             : attention::DcpCommPlan::kAllGatherReduceScatter;
      // A small gather budget splits prefill batches into token groups.
      cfg.max_context_chunk = s.rng() % 2 ? 8192 : 1 + static_cast<int64_t>(s.rng() % 64);
      SCOPED_TRACE(fmt::format("I={} B={} {} {} chunk={}", interleave, block,
                               attention::sfa_indexer_mode_name(mode),
                               attention::dcp_comm_plan_name(cfg.plan), cfg.max_context_chunk));
      const SfaRunResult got = run_sfa_layer(scenario, cfg);
      ASSERT_EQ(got.selections.size(), want_f32.selections.size());
      for (size_t i = 0; i < got.selections.size(); ++i) {
        ASSERT_TRUE(identical(got.selections[i], want_f32.selections[i]))
            << "selection, step " << i;
      }
      expect_close(got.outputs, want_f32.outputs, 1e-5, "f32");
      EXPECT_EQ(got.latent_bytes_per_rank * n, want_f32.latent_bytes_per_rank)
          << "the latent cache per rank is the N = 1 size divided by N";
      if (mode == attention::SfaIndexerMode::kReplicated) {
        EXPECT_EQ(got.indexer_bytes_per_rank, want_f32.indexer_bytes_per_rank)
            << "a replicated indexer cache holds every token on every rank";
      } else {
        EXPECT_EQ(got.indexer_bytes_per_rank * n, want_f32.indexer_bytes_per_rank)
            << "a sharded indexer cache is divided by N";
      }
      // bf16 caches on some layouts (keeps the sweep inside its time budget).
      if (s.rng() % 3 == 0) {
        SfaRunConfig single_bf16 = single, cfg_bf16 = cfg;
        single_bf16.cache_dtype = cfg_bf16.cache_dtype = DType::kBF16;
        const SfaRunResult want_bf16 = run_sfa_layer(scenario, single_bf16);
        const SfaRunResult got_bf16 = run_sfa_layer(scenario, cfg_bf16);
        for (size_t i = 0; i < got_bf16.selections.size(); ++i) {
          ASSERT_TRUE(identical(got_bf16.selections[i], want_bf16.selections[i]))
              << "bf16 selection, step " << i;
        }
        expect_close(got_bf16.outputs, want_bf16.outputs, 1e-2, "bf16");
      }
    }
  }
}

std::string n_name(const ::testing::TestParamInfo<int>& param) {
  return fmt::format("N{}", param.param);
}

INSTANTIATE_TEST_SUITE_P(NEqualsT, SfaDcp, ::testing::Values(2, 3, 4, 8), n_name);

}  // namespace
}  // namespace ctxpar::sfa_test
