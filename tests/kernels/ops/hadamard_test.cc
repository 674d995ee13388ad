#include "ctxpar/kernels/hadamard.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "ctxpar/core/error.h"
#include "kernels/ops/ops_test_util.h"

namespace ctxpar::kernels {
namespace {

class HadamardTest : public ops_test::SeededTest {};

// Dense Sylvester Hadamard product in double: out[r, i] = Σ_j (−1)^popcount(i & j)·x[r, j].
std::vector<double> dense_hadamard(const std::vector<double>& x, int64_t n, double scale) {
  std::vector<double> out(x.size(), 0.0);
  for (size_t r = 0; r < x.size() / static_cast<size_t>(n); ++r) {
    for (int64_t i = 0; i < n; ++i) {
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        const double sign = std::popcount(static_cast<uint64_t>(i & j)) % 2 ? -1.0 : 1.0;
        sum += sign * x[r * n + j];
      }
      out[r * n + i] = sum * scale;
    }
  }
  return out;
}

double relative(const std::vector<double>& a, const std::vector<double>& b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (a[i] - b[i]) * (a[i] - b[i]);
    norm += b[i] * b[i];
  }
  return std::sqrt(diff / norm);
}

TEST_F(HadamardTest, MatchesDenseMatrixProduct) {
  for (int64_t rows : {1, 3, 17}) {
    for (int64_t n : {1, 2, 4, 8, 16, 64, 128, 512}) {
      for (bool normalize : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << "rows " << rows << " n " << n << " normalize " << normalize);
        Tensor x = random({rows, n});
        const std::vector<double> expected =
            dense_hadamard(ops_test::to_doubles(x), n, normalize ? 1 / std::sqrt(double(n)) : 1.0);
        hadamard_transform(x, normalize);
        EXPECT_LE(relative(ops_test::to_doubles(x), expected), 1e-6);
      }
    }
  }
}

TEST_F(HadamardTest, NormalizedTwiceIsIdentityOnStridedViews) {
  // [tokens, heads, n] view inside wider rows.
  const int64_t tokens = 17, heads = 3, n = 128;
  Tensor storage = random({tokens, heads * n + 7});
  Tensor x = Tensor::wrap(storage.data<float>() + 7, {tokens, heads, n}, DType::kF32,
                          {heads * n + 7, n, 1});
  const Tensor original = storage.clone();
  const std::vector<double> expected_once =
      dense_hadamard(ops_test::to_doubles(x), n, 1 / std::sqrt(double(n)));
  hadamard_transform(x, true);
  EXPECT_LE(relative(ops_test::to_doubles(x), expected_once), 1e-6);
  hadamard_transform(x, true);
  EXPECT_LE(ops_test::relative_error(storage, original), 1e-6);
  // The 7 leading columns outside the view are untouched.
  EXPECT_EQ(ops_test::relative_error(storage.slice(1, 0, 7), original.slice(1, 0, 7)), 0.0);
}

TEST_F(HadamardTest, MalformedShapesThrow) {
  Tensor not_pow2 = random({3, 12});
  EXPECT_THROW(hadamard_transform(not_pow2, true), Error);
  Tensor empty_dim = random({3, 0});
  EXPECT_THROW(hadamard_transform(empty_dim, true), Error);
  Tensor bf16 = random({3, 16}, DType::kBF16);
  EXPECT_THROW(hadamard_transform(bf16, true), Error);
  Tensor storage = random({16, 3});
  Tensor transposed = Tensor::wrap(storage.raw(), {3, 16}, DType::kF32, {1, 3});
  EXPECT_THROW(hadamard_transform(transposed, false), Error);
}

}  // namespace
}  // namespace ctxpar::kernels
