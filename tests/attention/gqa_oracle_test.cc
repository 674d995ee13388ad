// GQA attention layer under every (T, N): equal to T = N = 1 and to a double reference.
#include <gtest/gtest.h>

#include "ctxpar/core/error.h"
#include "oracle_sweep.h"

namespace ctxpar::testing {
namespace {

class GqaOracle : public ::testing::TestWithParam<TpDcp> {};

TEST_P(GqaOracle, EveryStepMatchesSingleRankAndDoubleReference) {
  const TpDcp p = GetParam();
  const auto seed = std::random_device{}();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  LayerShape shape;
  shape.type = AttnType::kGqa;
  shape.hidden = 24 + static_cast<int64_t>(rng() % 3) * 8;
  shape.head_dim = 16;
  // KV heads: with DCP the group must sit inside one replicated KV head; without it, also
  // exercise KV heads split across ranks (num_kv_heads > T).
  if (p.dcp > 1) {
    shape.num_kv_heads = (p.tp / p.dcp) % 2 == 0 ? 2 : 1;
  } else {
    shape.num_kv_heads = p.tp % 2 == 0 ? std::vector<int64_t>{1, 2, 2 * p.tp}[rng() % 3] : 1;
  }
  shape.num_heads = std::max<int64_t>(2 * p.tp, 2 * shape.num_kv_heads);
  const Scenario s = make_scenario(shape, rng, 4, 40);
  sweep_against_single_rank(s, p, rng);
}

INSTANTIATE_TEST_SUITE_P(AllShapes, GqaOracle, ::testing::ValuesIn(all_tp_dcp()), tp_dcp_name);

TEST(GqaOracleConfig, InvalidDcpIsRejectedBeforeRunning) {
  std::mt19937 rng(std::random_device{}());
  LayerShape shape;
  shape.num_heads = 8;
  shape.num_kv_heads = 4;
  const Scenario s = make_scenario(shape, rng, 2, 8);
  RunConfig cfg;
  cfg.tp = 4;
  cfg.dcp = 2;  // 4 KV heads over 4 ranks: no replicated head to shard
  EXPECT_THROW(run_layer(s, cfg), Error);
}

}  // namespace
}  // namespace ctxpar::testing
