#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "ctxpar/core/error.h"
#include "ctxpar/engine/sampling_params.h"
#include "support/seeded_rng.h"

namespace ctxpar::engine {
namespace {

TEST(SamplingParams, ProblemsNameTheFieldAndValue) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  for (int trial = 0; trial < 50; ++trial) {
    SamplingParams ok;
    ok.temperature = 2 * unit(rng);
    ok.top_p = std::max(1e-3f, unit(rng));
    ok.top_k = static_cast<int32_t>(rng() % 100) - 1;
    ok.max_tokens = 1 + static_cast<int64_t>(rng() % 1000);
    ok.stop_token_ids = {static_cast<int32_t>(rng() % 500)};
    EXPECT_FALSE(ok.problem().has_value()) << *ok.problem();
    EXPECT_NO_THROW(ok.validate());

    const auto expect_problem = [](const SamplingParams& p, const std::string& field) {
      const auto problem = p.problem();
      ASSERT_TRUE(problem.has_value()) << field;
      EXPECT_NE(problem->find(field), std::string::npos) << *problem;
      EXPECT_THROW(p.validate(), Error);
    };
    SamplingParams p = ok;
    p.temperature = -(0.01f + unit(rng));
    expect_problem(p, "temperature");
    p.temperature = std::numeric_limits<float>::quiet_NaN();
    expect_problem(p, "temperature");
    p = ok;
    p.top_p = unit(rng) < 0.5f ? -unit(rng) : 1.0f + 0.01f + unit(rng);
    expect_problem(p, "top_p");
    p.top_p = 0.0f;
    expect_problem(p, "top_p");
    p = ok;
    p.max_tokens = -static_cast<int64_t>(rng() % 5);
    expect_problem(p, "max_tokens must be at least 1, got " + std::to_string(p.max_tokens));
    p = ok;
    p.stop_token_ids.push_back(-1 - static_cast<int32_t>(rng() % 9));
    expect_problem(p, std::to_string(p.stop_token_ids.back()));
    p = ok;
    p.eos_token_ids = {-7};
    expect_problem(p, "eos_token_ids");
  }
  SamplingParams g;
  g.temperature = 0.0f;
  EXPECT_TRUE(g.is_greedy());
  g.eos_token_ids = {3, 9};
  EXPECT_TRUE(g.is_eos(9));
  EXPECT_FALSE(g.is_eos(4));
}

}  // namespace
}  // namespace ctxpar::engine
