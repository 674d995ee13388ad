#include "ctxpar/kernels/rope.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ctxpar/core/error.h"
#include "kernels/ops/ops_test_util.h"

namespace ctxpar::kernels {
namespace {

class RopeTest : public ops_test::SeededTest {
 protected:
  Tensor random_positions(int64_t tokens, int64_t max_position, DType dtype) {
    Tensor p = Tensor::empty({tokens}, DType::kI64);
    for (int64_t t = 0; t < tokens; ++t) p.data<int64_t>()[t] = uniform_int(0, max_position - 1);
    return dtype == DType::kI64 ? p : p.to(dtype);
  }
};

RopeScaling deepseek_yarn() {
  RopeScaling s;
  s.type = "yarn";
  s.factor = 40;
  s.original_max_position = 4096;
  s.beta_fast = 32;
  s.beta_slow = 1;
  s.mscale = 1;
  s.mscale_all_dim = 1;
  return s;
}

std::vector<RopeScaling> all_scalings() {
  RopeScaling none, linear, llama3, yarn = deepseek_yarn(), yarn_unequal = deepseek_yarn();
  linear.type = "linear";
  linear.factor = 4;
  llama3.type = "llama3";
  llama3.factor = 8;
  llama3.original_max_position = 128;
  llama3.low_freq_factor = 1;
  llama3.high_freq_factor = 4;
  yarn.original_max_position = 256;
  yarn_unequal.original_max_position = 256;
  yarn_unequal.mscale_all_dim = 0;  // magnitude 1 + 0.1·ln 40 ≠ 1
  return {none, linear, llama3, yarn, yarn_unequal};
}

TEST_F(RopeTest, HandDerivedRotationsForBothPairings) {
  // rotary_dim 4, theta 100: inv_freq = [1, 0.1]; position 1 → angles 1 and 0.1.
  const RopeCache cache(4, 8, 100.0, RopeScaling{});
  ASSERT_NEAR(cache.inv_freq()[1], 0.1, 1e-15);
  std::vector<float> data = {1, 2, 3, 4};
  std::vector<int32_t> pos = {1};
  const Tensor positions = Tensor::wrap(pos.data(), {1}, DType::kI32);
  const double c0 = std::cos(1.0), s0 = std::sin(1.0), c1 = std::cos(0.1), s1 = std::sin(0.1);

  Tensor x = Tensor::wrap(data.data(), {1, 4}, DType::kF32);
  cache.apply(x, positions, RopeStyle::kRotateHalf);  // pairs (x0, x2) by 1, (x1, x3) by 0.1
  EXPECT_NEAR(data[0], 1 * c0 - 3 * s0, 1e-6);
  EXPECT_NEAR(data[2], 3 * c0 + 1 * s0, 1e-6);
  EXPECT_NEAR(data[1], 2 * c1 - 4 * s1, 1e-6);
  EXPECT_NEAR(data[3], 4 * c1 + 2 * s1, 1e-6);

  data = {1, 2, 3, 4};
  cache.apply(x, positions, RopeStyle::kInterleaved);  // pairs (x0, x1) by 1, (x2, x3) by 0.1
  EXPECT_NEAR(data[0], 1 * c0 - 2 * s0, 1e-6);
  EXPECT_NEAR(data[1], 2 * c0 + 1 * s0, 1e-6);
  EXPECT_NEAR(data[2], 3 * c1 - 4 * s1, 1e-6);
  EXPECT_NEAR(data[3], 4 * c1 + 3 * s1, 1e-6);
}

TEST_F(RopeTest, InterleavedEqualsRotateHalfOnPermutedPairs) {
  const int64_t rotary = 2 * uniform_int(2, 40), tokens = 17, heads = 3, max_pos = 999;
  const RopeCache cache(rotary, max_pos, 10000.0, deepseek_yarn());
  const Tensor positions = random_positions(tokens, max_pos, DType::kI64);
  Tensor inter = random({tokens, heads, rotary});
  // Pair j sits at (2j, 2j+1) interleaved and at (j, j + r/2) rotate-half.
  Tensor half = Tensor::empty({tokens, heads, rotary}, DType::kF32);
  const int64_t h = rotary / 2;
  for (int64_t row = 0; row < tokens * heads; ++row) {
    for (int64_t j = 0; j < h; ++j) {
      half.data<float>()[row * rotary + j] = inter.data<float>()[row * rotary + 2 * j];
      half.data<float>()[row * rotary + j + h] = inter.data<float>()[row * rotary + 2 * j + 1];
    }
  }
  cache.apply(inter, positions, RopeStyle::kInterleaved);
  cache.apply(half, positions, RopeStyle::kRotateHalf);
  for (int64_t row = 0; row < tokens * heads; ++row) {
    for (int64_t j = 0; j < h; ++j) {
      ASSERT_EQ(half.data<float>()[row * rotary + j], inter.data<float>()[row * rotary + 2 * j]);
      ASSERT_EQ(half.data<float>()[row * rotary + j + h],
                inter.data<float>()[row * rotary + 2 * j + 1]);
    }
  }
}

TEST_F(RopeTest, PositionZeroOnlyScalesByTheMagnitude) {
  for (const RopeScaling& s : all_scalings()) {
    SCOPED_TRACE(s.type);
    const RopeCache cache(64, 16, 10000.0, s);
    const Tensor x0 = random({3, 2, 80});
    Tensor x = x0.clone();
    cache.apply(x, Tensor::zeros({3}, DType::kI32), RopeStyle::kRotateHalf);
    const double m = cache.magnitude_scale();
    EXPECT_DOUBLE_EQ(m, rope_magnitude_scale(s));
    for (int64_t i = 0; i < x.numel(); ++i) {
      const bool rotated = i % 80 < 64;
      ASSERT_NEAR(x.data<float>()[i], x0.data<float>()[i] * (rotated ? m : 1.0), 1e-6) << i;
    }
  }
}

TEST_F(RopeTest, MatchesReferenceForEveryScalingStyleAndPartialRotary) {
  for (const RopeScaling& s : all_scalings()) {
    for (RopeStyle style : {RopeStyle::kRotateHalf, RopeStyle::kInterleaved}) {
      for (int64_t tokens : {1, 3, 17}) {
        const int64_t rotary = 2 * uniform_int(1, 48), extra = uniform_int(0, 9);
        const int64_t heads = uniform_int(1, 5), max_pos = 3000;
        SCOPED_TRACE(testing::Message() << s.type << " style " << static_cast<int>(style)
                                        << " tokens " << tokens << " rotary " << rotary);
        const double theta = uniform(100, 1e6);
        const RopeCache cache(rotary, max_pos, theta, s);
        const Tensor positions =
            random_positions(tokens, max_pos, uniform_int(0, 1) ? DType::kI32 : DType::kI64);
        Tensor x = random({tokens, heads, rotary + extra});
        Tensor expected = x.clone();
        rope_reference(expected, positions, rotary, theta, s, style);
        const Tensor before = x.clone();
        cache.apply(x, positions, style);
        EXPECT_LE(ops_test::relative_error(x, expected), 1e-5);
        // The dims past rotary_dim are untouched, bit for bit.
        EXPECT_EQ(ops_test::relative_error(x.slice(2, rotary, rotary + extra),
                                           before.slice(2, rotary, rotary + extra)),
                  0.0);
      }
    }
  }
}

TEST_F(RopeTest, RopePartOfAWiderHeadAndTwoDimInput) {
  // DeepSeek MLA: q head = [nope 128 | rope 64]; rotate only the view of the rope part.
  const int64_t tokens = 17, heads = 3, nope = 128, rope = 64, max_pos = 5000;
  const RopeCache cache(rope, max_pos, 10000.0, deepseek_yarn());
  const Tensor positions = random_positions(tokens, max_pos, DType::kI64);
  const Tensor q = random({tokens, heads, nope + rope});
  Tensor q_pe = q.slice(2, nope, nope + rope);
  Tensor expected = q_pe.clone();
  rope_reference(expected, positions, rope, 10000.0, deepseek_yarn(), RopeStyle::kInterleaved);
  const Tensor nope_before = q.slice(2, 0, nope).clone();
  cache.apply(q_pe, positions, RopeStyle::kInterleaved);
  EXPECT_LE(ops_test::relative_error(q_pe, expected), 1e-5);
  EXPECT_EQ(ops_test::relative_error(q.slice(2, 0, nope), nope_before), 0.0);

  // k_pe [tokens, 64]: one shared rope head, 2-D.
  Tensor k_pe = random({tokens, rope});
  Tensor k_expected = k_pe.clone();
  rope_reference(k_expected, positions, rope, 10000.0, deepseek_yarn(), RopeStyle::kInterleaved);
  cache.apply(k_pe, positions, RopeStyle::kInterleaved);
  EXPECT_LE(ops_test::relative_error(k_pe, k_expected), 1e-5);
}

TEST_F(RopeTest, Bf16InputWithinBf16Tolerance) {
  const int64_t tokens = 17, heads = 4, rotary = 64, max_pos = 4096;
  const RopeCache cache(rotary, max_pos, 500000.0, all_scalings()[2]);
  const Tensor positions = random_positions(tokens, max_pos, DType::kI32);
  Tensor x = random({tokens, heads, rotary}, DType::kBF16);
  Tensor expected = x.to(DType::kF32);
  rope_reference(expected, positions, rotary, 500000.0, all_scalings()[2], RopeStyle::kRotateHalf);
  cache.apply(x, positions, RopeStyle::kRotateHalf);
  EXPECT_LE(ops_test::relative_error(x, expected), 1e-2);
}

TEST_F(RopeTest, BadPositionsAndShapesThrowAndLeaveXUntouched) {
  const RopeCache cache(8, 10, 10000.0, RopeScaling{});
  Tensor x = random({3, 2, 8});
  const Tensor before = x.clone();
  std::vector<int64_t> too_far = {0, 10, 1};  // 10 == max_position
  EXPECT_THROW(
      cache.apply(x, Tensor::wrap(too_far.data(), {3}, DType::kI64), RopeStyle::kRotateHalf),
      Error);
  std::vector<int32_t> negative = {0, 1, -1};
  EXPECT_THROW(
      cache.apply(x, Tensor::wrap(negative.data(), {3}, DType::kI32), RopeStyle::kInterleaved),
      Error);
  EXPECT_EQ(ops_test::relative_error(x, before), 0.0);

  const Tensor ok_positions = Tensor::zeros({3}, DType::kI32);
  EXPECT_THROW(cache.apply(x, Tensor::zeros({2}, DType::kI32), RopeStyle::kRotateHalf), Error);
  EXPECT_THROW(cache.apply(x, Tensor::zeros({3}, DType::kF32), RopeStyle::kRotateHalf), Error);
  Tensor narrow = random({3, 2, 6});
  EXPECT_THROW(cache.apply(narrow, ok_positions, RopeStyle::kRotateHalf), Error);
  Tensor four_d = random({3, 1, 2, 8});
  EXPECT_THROW(cache.apply(four_d, ok_positions, RopeStyle::kRotateHalf), Error);
  Tensor f16 = random({3, 8}, DType::kF16);
  EXPECT_THROW(cache.apply(f16, ok_positions, RopeStyle::kRotateHalf), Error);

  EXPECT_THROW(RopeCache(7, 10, 10000.0, RopeScaling{}), Error);
  EXPECT_THROW(RopeCache(8, 0, 10000.0, RopeScaling{}), Error);
  EXPECT_THROW(RopeCache(8, 10, -1.0, RopeScaling{}), Error);
  RopeScaling unknown;
  unknown.type = "dynamic";
  EXPECT_THROW(RopeCache(8, 10, 10000.0, unknown), Error);
  RopeScaling yarn_no_original = deepseek_yarn();
  yarn_no_original.original_max_position = 0;
  EXPECT_THROW(RopeCache(8, 10, 10000.0, yarn_no_original), Error);
  RopeScaling llama3_bad;
  llama3_bad.type = "llama3";
  llama3_bad.factor = 8;
  llama3_bad.original_max_position = 8192;
  llama3_bad.low_freq_factor = 4;
  llama3_bad.high_freq_factor = 4;
  EXPECT_THROW(RopeCache(8, 10, 10000.0, llama3_bad), Error);
}

}  // namespace
}  // namespace ctxpar::kernels
