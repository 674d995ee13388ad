// The RoPE scalings' inverse frequencies against formulas re-derived here in another form:
// YaRN's correction dims found by bisection on the rotation count instead of the closed form,
// llama3's bands expressed as rotations over the original context instead of wavelengths.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "ctxpar/kernels/rope.h"
#include "kernels/ops/ops_test_util.h"

namespace ctxpar::kernels {
namespace {

std::vector<double> base_inv_freq(int64_t d, double theta) {
  std::vector<double> f;
  for (int64_t j = 0; j < d / 2; ++j) f.push_back(std::exp(-std::log(theta) * 2.0 * j / d));
  return f;
}

// Turns completed over `positions` by the (continuous) dim index c.
double rotations(double c, int64_t d, double theta, double positions) {
  return positions * std::exp(-std::log(theta) * 2.0 * c / d) / (2 * std::numbers::pi);
}

// The continuous dim index at which the rotation count equals `target` (it falls with c).
double dim_with_rotations(double target, int64_t d, double theta, double positions) {
  double lo = -10.0 * d, hi = 10.0 * d;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (rotations(mid, d, theta, positions) > target ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

std::vector<double> yarn_expected(int64_t d, double theta, const RopeScaling& s) {
  const double orig = static_cast<double>(s.original_max_position);
  const double low = std::max(std::floor(dim_with_rotations(s.beta_fast, d, theta, orig)), 0.0);
  double high = std::min(std::ceil(dim_with_rotations(s.beta_slow, d, theta, orig)), d - 1.0);
  if (high == low) high += 0.001;
  std::vector<double> f = base_inv_freq(d, theta);
  for (int64_t j = 0; j < d / 2; ++j) {
    const double t = std::min(1.0, std::max(0.0, (j - low) / (high - low)));
    f[j] *= (1 - t) + t / s.factor;
  }
  return f;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t j = 0; j < got.size(); ++j) EXPECT_NEAR(got[j] / want[j], 1.0, 1e-12) << "j " << j;
}

class RopeScalingTest : public ops_test::SeededTest {};

TEST_F(RopeScalingTest, YarnMatchesIndependentFormulaForDeepSeekConfig) {
  RopeScaling s;
  s.type = "yarn";
  s.factor = 40;
  s.original_max_position = 4096;
  s.beta_fast = 32;
  s.beta_slow = 1;
  s.mscale = 1;
  s.mscale_all_dim = 1;
  const std::vector<double> got = rope_inv_freq(64, 10000.0, s);
  expect_close(got, yarn_expected(64, 10000.0, s));
  // The fastest dims are kept, the slowest fully interpolated.
  const std::vector<double> base = base_inv_freq(64, 10000.0);
  EXPECT_NEAR(got.front() / base.front(), 1.0, 1e-12);
  EXPECT_NEAR(got.back() / base.back(), 1.0 / 40, 1e-12);
  // Equal mscale and mscale_all_dim cancel; the softmax scale factor is separate.
  EXPECT_DOUBLE_EQ(rope_magnitude_scale(s), 1.0);
  EXPECT_NEAR(yarn_get_mscale(40, 1), 1 + 0.1 * std::log(40.0), 1e-15);
  EXPECT_EQ(yarn_get_mscale(1, 1), 1.0);
  EXPECT_EQ(yarn_get_mscale(0.5, 1), 1.0);
  // The cache uses exactly these frequencies.
  const RopeCache cache(64, 8, 10000.0, s);
  EXPECT_EQ(cache.inv_freq(), got);
}

TEST_F(RopeScalingTest, YarnMatchesIndependentFormulaForRandomConfigs) {
  for (int rep = 0; rep < 20; ++rep) {
    RopeScaling s;
    s.type = "yarn";
    s.factor = uniform(1.5, 64);
    s.original_max_position = uniform_int(256, 65536);
    s.beta_fast = uniform(8, 64);
    s.beta_slow = uniform(0.5, 2);
    s.mscale = uniform(0.5, 1.5);
    s.mscale_all_dim = uniform(0, 1.5);
    const int64_t d = 2 * uniform_int(4, 96);
    const double theta = uniform(1000, 1e6);
    SCOPED_TRACE(testing::Message() << "d " << d << " theta " << theta << " factor " << s.factor);
    expect_close(rope_inv_freq(d, theta, s), yarn_expected(d, theta, s));
    EXPECT_NEAR(rope_magnitude_scale(s),
                (0.1 * s.mscale * std::log(s.factor) + 1) /
                    (0.1 * s.mscale_all_dim * std::log(s.factor) + 1),
                1e-14);
    // Without mscale_all_dim the magnitude is yarn_get_mscale(factor, 1) whatever mscale says;
    // an explicit attention_factor replaces both.
    RopeScaling only_mscale = s;
    only_mscale.mscale_all_dim = 0;
    EXPECT_NEAR(rope_magnitude_scale(only_mscale), 0.1 * std::log(s.factor) + 1, 1e-14);
    RopeScaling given = s;
    given.attention_factor = uniform(0.5, 2);
    EXPECT_EQ(rope_magnitude_scale(given), given.attention_factor);
  }
}

TEST_F(RopeScalingTest, Llama3MatchesRotationBandFormula) {
  RopeScaling s;
  s.type = "llama3";
  s.factor = 8;
  s.low_freq_factor = 1;
  s.high_freq_factor = 4;
  s.original_max_position = 8192;
  for (auto [d, theta] :
       {std::pair<int64_t, double>{128, 500000.0}, {2 * uniform_int(4, 80), uniform(1e4, 1e6)}}) {
    SCOPED_TRACE(testing::Message() << "d " << d << " theta " << theta);
    std::vector<double> want = base_inv_freq(d, theta);
    int kept = 0, scaled = 0, blended = 0;
    for (double& f : want) {
      const double r = s.original_max_position * f / (2 * std::numbers::pi);  // rotations
      if (r > s.high_freq_factor) {
        ++kept;
      } else if (r < s.low_freq_factor) {
        f /= s.factor;
        ++scaled;
      } else {
        const double t = (r - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f *= (1 - t) / s.factor + t;
        ++blended;
      }
    }
    const std::vector<double> got = rope_inv_freq(d, theta, s);
    expect_close(got, want);
    if (d == 128) {
      // Llama 3.1's shape: all three bands are present.
      EXPECT_GT(kept, 0);
      EXPECT_GT(scaled, 0);
      EXPECT_GT(blended, 0);
    }
    EXPECT_DOUBLE_EQ(rope_magnitude_scale(s), 1.0);
  }
}

TEST_F(RopeScalingTest, LinearAndNoneScaling) {
  const int64_t d = 2 * uniform_int(1, 64);
  const double theta = uniform(100, 1e6);
  RopeScaling none, linear;
  linear.type = "linear";
  linear.factor = uniform(1, 16);
  const std::vector<double> base = base_inv_freq(d, theta);
  std::vector<double> divided = base;
  for (double& f : divided) f /= linear.factor;
  expect_close(rope_inv_freq(d, theta, none), base);
  expect_close(rope_inv_freq(d, theta, linear), divided);
  RopeScaling default_name;
  default_name.type = "default";
  expect_close(rope_inv_freq(d, theta, default_name), base);
}

}  // namespace
}  // namespace ctxpar::kernels
