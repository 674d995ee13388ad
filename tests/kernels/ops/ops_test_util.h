// Shared helpers of the ops kernel tests: a fresh seed per test (traced, so a failure can be
// replayed), random tensors, and error norms computed in double.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ctxpar/core/tensor.h"

namespace ctxpar::kernels::ops_test {

// Base fixture: every test draws from its own std::random_device seed, shown on failure.
class SeededTest : public ::testing::Test {
 protected:
  SeededTest()
      : seed_((static_cast<uint64_t>(std::random_device{}()) << 32) | std::random_device{}()),
        rng_(seed_),
        trace_(__FILE__, __LINE__, "seed " + std::to_string(seed_)) {}

  int64_t uniform_int(int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng_);
  }

  // Uniform values in [lo, hi), stored in `dtype` (float kinds round to it).
  Tensor random(const Shape& shape, DType dtype = DType::kF32, double lo = -1, double hi = 1) {
    Tensor f = Tensor::empty(shape, DType::kF32);
    float* p = f.data<float>();
    for (int64_t i = 0; i < f.numel(); ++i) p[i] = static_cast<float>(uniform(lo, hi));
    return dtype == DType::kF32 ? f : f.to(dtype);
  }

  uint64_t seed_;
  std::mt19937_64 rng_;
  ::testing::ScopedTrace trace_;
};

// Every element of a tensor (any dtype, any strides) in row-major order, as doubles.
inline std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t.numel()));
  std::vector<int64_t> index(static_cast<size_t>(t.ndim()), 0);
  std::function<void(int)> walk = [&](int dim) {
    if (dim == t.ndim()) {
      out.push_back(t.item_as_double(index));
      return;
    }
    for (index[dim] = 0; index[dim] < t.size(dim); ++index[dim]) walk(dim + 1);
  };
  if (t.numel() > 0) walk(0);
  return out;
}

// ‖out − ref‖₂ / ‖ref‖₂ in double (DESIGN.md §7's relative error).
inline double relative_error(const Tensor& out, const Tensor& ref) {
  EXPECT_EQ(out.shape(), ref.shape());
  const std::vector<double> a = to_doubles(out), b = to_doubles(ref);
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += b[i] * b[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-300);
}

// ‖out − ref‖₂ / ‖scale‖₂ in double. For sums, `scale` holds each output's sum of term
// magnitudes (Σ|xᵢ·wᵢ|): rounding error grows with that, while ‖ref‖ can be near zero when
// a few terms cancel, which makes relative_error fail a correct kernel.
inline double error_relative_to(const Tensor& out, const Tensor& ref, const Tensor& scale) {
  EXPECT_EQ(out.shape(), ref.shape());
  EXPECT_EQ(scale.shape(), ref.shape());
  const std::vector<double> a = to_doubles(out), b = to_doubles(ref), s = to_doubles(scale);
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size() && i < b.size() && i < s.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += s[i] * s[i];
  }
  return std::sqrt(diff) / std::max(std::sqrt(norm), 1e-300);
}

// |t| as a contiguous float32 tensor (any dtype, any strides).
inline Tensor absolute(const Tensor& t) {
  const std::vector<double> v = to_doubles(t);
  Tensor a = Tensor::empty(t.shape(), DType::kF32);
  for (size_t i = 0; i < v.size(); ++i) a.data<float>()[i] = static_cast<float>(std::fabs(v[i]));
  return a;
}

inline bool all_finite(const Tensor& t) {
  for (double v : to_doubles(t)) {
    if (!std::isfinite(v)) return false;
  }
  return true;
}

// A float32 tensor of `shape` that is a view into a wider buffer: the last dim sits at
// column `offset` of rows `pad` elements wider, so its rows are strided. Filled with NaN.
inline Tensor strided_f32(const Shape& shape, int64_t offset, int64_t pad) {
  Shape wide = shape;
  wide.back() += pad;
  Tensor buffer = Tensor::empty(wide, DType::kF32);
  buffer.fill_bytes(0xff);
  return buffer.slice(-1, offset, offset + shape.back());
}

}  // namespace ctxpar::kernels::ops_test
