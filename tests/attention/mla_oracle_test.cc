// MLA attention layer under every (T, N): decode (absorbed), chunked prefill with the
// context gathered across the DCP group, mixed batches; equal to T = N = 1 and to a double
// reference of the expanded form.
#include <gtest/gtest.h>

#include "oracle_sweep.h"
#include "support/seeded_rng.h"

namespace ctxpar::testing {
namespace {

class MlaOracle : public ::testing::TestWithParam<TpDcp> {};

TEST_P(MlaOracle, EveryStepMatchesSingleRankAndDoubleReference) {
  const TpDcp p = GetParam();
  const auto seed = test_support::test_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  LayerShape shape;
  shape.type = AttnType::kMla;
  shape.hidden = 32;
  shape.num_heads = 2 * p.tp;
  shape.kv_lora = 24 + static_cast<int64_t>(rng() % 2) * 8;
  shape.nope = 8;
  shape.rope = 8;
  shape.v_dim = 12;
  const Scenario s = make_scenario(shape, rng, 4, 40);
  sweep_against_single_rank(s, p, rng);
}

INSTANTIATE_TEST_SUITE_P(AllShapes, MlaOracle, ::testing::ValuesIn(all_tp_dcp()), tp_dcp_name);

}  // namespace
}  // namespace ctxpar::testing
