#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "ctxpar/core/half.h"

namespace ctxpar {
namespace {

// Reference rounding by exhaustive neighbour search: the representable value nearest to x,
// ties to the one with an even last bit.
template <typename H>
uint16_t nearest_even(float x) {
  const double v = x;
  uint16_t best = 0;
  double best_err = std::numeric_limits<double>::infinity();
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = H::to_f32(static_cast<uint16_t>(b));
    if (std::isnan(f) || std::isinf(f)) continue;
    if (std::signbit(f) != std::signbit(x)) continue;
    const double err = std::fabs(static_cast<double>(f) - v);
    if (err < best_err || (err == best_err && (b & 1u) == 0)) {
      best_err = err;
      best = static_cast<uint16_t>(b);
    }
  }
  return best;
}

TEST(Bf16, RoundsToNearestEvenOnRandomValues) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> dist(-1e3f, 1e3f);
  for (int i = 0; i < 300; ++i) {
    const float x = dist(rng);
    EXPECT_EQ(bf16::from_f32(x), nearest_even<bf16>(x)) << x;
  }
}

TEST(Bf16, TiesGoToEven) {
  // 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125; even mantissa is 1.0.
  EXPECT_EQ(bf16::from_f32(1.0f + 1.0f / 256), bf16::from_f32(1.0f));
  // 1 + 3·2^-8 is halfway between mantissas 1 and 2 (odd, even): rounds up to 2.
  EXPECT_EQ(bf16::from_f32(1.0f + 3.0f / 256), 0x3f82);
}

TEST(Bf16, NanStaysNanAndInfStaysInf) {
  const float nan_small_payload = f32_from_bits(0x7f800001u);  // would truncate to inf
  EXPECT_TRUE(std::isnan(bf16::to_f32(bf16::from_f32(nan_small_payload))));
  EXPECT_TRUE(std::isnan(bf16::to_f32(bf16::from_f32(-std::nanf("")))));
  EXPECT_EQ(bf16::to_f32(bf16::from_f32(INFINITY)), INFINITY);
  EXPECT_EQ(bf16::to_f32(bf16::from_f32(-INFINITY)), -INFINITY);
  // Largest finite f32 rounds to inf in bf16 (it is above the largest bf16 + half an ulp).
  EXPECT_EQ(bf16::to_f32(bf16::from_f32(std::numeric_limits<float>::max())), INFINITY);
}

TEST(F16, RoundTripsEveryHalfValue) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = f16::to_f32(static_cast<uint16_t>(b));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16::to_f32(f16::from_f32(f))));
    } else {
      EXPECT_EQ(f16::from_f32(f), b) << std::hex << b;
    }
  }
}

TEST(F16, RoundsToNearestEvenIncludingSubnormalsAndOverflow) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_real_distribution<float> exponent(-26.0f, 16.5f);
  std::uniform_int_distribution<int> sign(0, 1);
  for (int i = 0; i < 300; ++i) {
    const float x = (sign(rng) ? -1.0f : 1.0f) * std::exp2(exponent(rng));
    if (std::fabs(x) >= 65520.0f) {
      EXPECT_TRUE(std::isinf(f16::to_f32(f16::from_f32(x)))) << x;
    } else {
      EXPECT_EQ(f16::from_f32(x), nearest_even<f16>(x)) << x;
    }
  }
  EXPECT_EQ(f16::to_f32(f16::from_f32(65519.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(f16::to_f32(f16::from_f32(65520.0f))));
}

}  // namespace
}  // namespace ctxpar
