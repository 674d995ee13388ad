// Shared helpers of the sparse-attention tests: seeded random tensors and the ISAs this CPU
// can run.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/tensor.h"
#include "support/seeded_rng.h"

namespace ctxpar::sfa_test {

// Fresh seed per test, printed on failure.
class SeededTest : public ::testing::Test {
 protected:
  SeededTest()
      : seed_(test_support::test_seed()), rng_(seed_), trace_(__FILE__, __LINE__, label()) {}

  std::mt19937& rng() { return rng_; }
  int64_t uniform_int(int64_t lo, int64_t hi) {  // [lo, hi]
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  Tensor random(const Shape& shape, float scale = 1.0f) {
    Tensor t = Tensor::empty(shape, DType::kF32);
    std::uniform_real_distribution<float> dist(-scale, scale);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng_);
    return t;
  }

 private:
  std::string label() const { return fmt::format("seed {}", seed_); }
  uint32_t seed_;
  std::mt19937 rng_;
  ::testing::ScopedTrace trace_;
};

// Every SIMD variant this CPU (and CTXPAR_ISA) allows, scalar first.
inline std::vector<Isa> available_isas() {
  std::vector<Isa> out{Isa::kScalar};
  if (active_isa() >= Isa::kAvx2) out.push_back(Isa::kAvx2);
  if (active_isa() >= Isa::kAvx512) out.push_back(Isa::kAvx512);
  if (active_isa() >= Isa::kAmx) out.push_back(Isa::kAmx);
  return out;
}

}  // namespace ctxpar::sfa_test
