// The FMA ceiling's loops compute what they claim: each chain x ← x·a + b, summed. A loop that
// the compiler shortened or that ran fewer chains gives a different sum.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <utility>
#include <vector>

#include "ctxpar/core/cpu_features.h"
#include "fma_ceiling.h"
#include "fma_loop.h"

namespace ctxpar::bench::detail {
namespace {

double expected_sum(int64_t iterations) {
  double sum = 0;
  for (int j = 0; j < kFmaChains; ++j) {
    double x = 0.001f * static_cast<float>(j);
    for (int64_t i = 0; i < iterations; ++i) x = x * static_cast<double>(0.999f) + 1e-4f;
    sum += x;
  }
  return sum;
}

TEST(FmaLoop, SumsEveryChainOverEveryIteration) {
  const CpuFeatures& f = cpu_features();
  std::vector<std::pair<const char*, float (*)(int64_t)>> loops;
  if (f.avx2_fma) loops.emplace_back("avx2", fma_loop_avx2);
  if (f.avx512) loops.emplace_back("avx512", fma_loop_avx512);
  std::cout << "fma loops run:";
  for (const auto& [name, loop] : loops) std::cout << " " << name;
  std::cout << "\n";
  for (const auto& [name, loop] : loops) {
    for (int64_t iterations : {0, 1, 7, 1000}) {
      SCOPED_TRACE(testing::Message() << name << " iterations " << iterations);
      const double want = expected_sum(iterations);
      EXPECT_NEAR(loop(iterations), want, 1e-5 * std::max(1.0, std::abs(want)));
    }
  }
}

// Every chain starts at j · kDotLoopStart and gains 0.75 · 2^-10 per step, exactly. Without
// AVX-512 BF16 the ceiling reports 0 instead of running the loop.
TEST(DotLoop, SumsEveryChainOverEveryIteration) {
  if (!cpu_features().avx512_bf16) {
    std::cout << "no AVX-512 BF16: checking that the bf16 dot ceiling reports none\n";
    const FmaCeiling none = measure_bf16_dot_ceiling(1);
    EXPECT_EQ(none.gflop_per_s, 0.0);
    EXPECT_EQ(none.loop_isa, "none");
    return;
  }
  for (int64_t iterations : {0, 1, 7, 1000, 3001}) {
    SCOPED_TRACE(testing::Message() << "iterations " << iterations);
    double want = 0;
    for (int j = 0; j < kFmaChains; ++j) {
      want += kDotLoopStart * j + 0.75 / 1024 * static_cast<double>(iterations);
    }
    EXPECT_EQ(dot_loop_avx512bf16(iterations), want);
  }
}

}  // namespace
}  // namespace ctxpar::bench::detail
