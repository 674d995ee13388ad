#include "ctxpar/kernels/topk.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ctxpar/core/error.h"
#include "kernels/ops/ops_test_util.h"

namespace ctxpar::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

class TopkTest : public ops_test::SeededTest {
 protected:
  // Scores drawn from `distinct` integer levels, so ties are everywhere when it is small.
  Tensor tied_scores(int64_t rows, int64_t n, int64_t distinct) {
    Tensor s = Tensor::empty({rows, n}, DType::kF32);
    for (int64_t i = 0; i < s.numel(); ++i)
      s.data<float>()[i] = static_cast<float>(uniform_int(0, distinct - 1));
    return s;
  }

  // Kernel vs reference: identical indices and bit-identical values.
  void expect_same_as_reference(const Tensor& scores, int64_t k, const Tensor* valid_len) {
    const int64_t rows = scores.size(0);
    Tensor indices = Tensor::empty({rows, k}, DType::kI32),
           values = Tensor::empty({rows, k}, DType::kF32);
    Tensor ref_indices = Tensor::empty({rows, k}, DType::kI32),
           ref_values = Tensor::empty({rows, k}, DType::kF32);
    indices.fill(-7);
    values.fill_bytes(0xff);
    topk(scores, k, valid_len, indices, &values);
    topk_reference(scores, k, valid_len, ref_indices, &ref_values);
    ASSERT_EQ(std::memcmp(indices.raw(), ref_indices.raw(), indices.nbytes()), 0);
    ASSERT_EQ(std::memcmp(values.raw(), ref_values.raw(), values.nbytes()), 0);
    // Without values the indices are the same.
    Tensor only = Tensor::empty({rows, k}, DType::kI32);
    topk(scores, k, valid_len, only, nullptr);
    ASSERT_EQ(std::memcmp(only.raw(), ref_indices.raw(), only.nbytes()), 0);
  }

  static std::vector<int32_t> row_indices(const Tensor& indices, int64_t r) {
    std::vector<int32_t> out;
    for (int64_t j = 0; j < indices.size(1); ++j)
      out.push_back(indices.data<int32_t>()[r * indices.size(1) + j]);
    return out;
  }
};

TEST_F(TopkTest, HandCasesWithTiesNanSignedZeroAndShortRows) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Row 0: ties go to the lower column. Row 1: NaN below −inf, −0 ties +0.
  // Row 2: only 2 valid columns, k = 4 → two selected, then -1 / -inf.
  std::vector<float> data = {1,   3,     3,     2,    0,  //
                             nan, -kInf, -0.0f, 0.0f, 5,  //
                             9,   1,     8,     7,    6};
  Tensor scores = Tensor::wrap(data.data(), {3, 5}, DType::kF32);
  std::vector<int32_t> valid_data = {5, 5, 2};
  Tensor valid = Tensor::wrap(valid_data.data(), {3}, DType::kI32);
  Tensor indices = Tensor::empty({3, 4}, DType::kI32), values = Tensor::empty({3, 4}, DType::kF32);
  topk(scores, 4, &valid, indices, &values);
  EXPECT_EQ(row_indices(indices, 0), (std::vector<int32_t>{1, 2, 3, 0}));
  EXPECT_EQ(row_indices(indices, 1), (std::vector<int32_t>{4, 2, 3, 1}));
  EXPECT_EQ(row_indices(indices, 2), (std::vector<int32_t>{0, 1, -1, -1}));
  EXPECT_EQ(values.data<float>()[0], 3.0f);
  EXPECT_EQ(values.data<float>()[7], -kInf);  // row 1's 4th pick is −inf itself
  EXPECT_EQ(values.data<float>()[8 + 1], 1.0f);
  EXPECT_EQ(values.data<float>()[8 + 2], -kInf);  // unused tail
  EXPECT_EQ(values.data<float>()[8 + 3], -kInf);

  // k larger than n: all 5 columns, then the tail.
  Tensor wide = Tensor::empty({3, 7}, DType::kI32);
  topk(scores, 7, nullptr, wide, nullptr);
  EXPECT_EQ(row_indices(wide, 1), (std::vector<int32_t>{4, 2, 3, 1, 0, -1, -1}));
}

TEST_F(TopkTest, RandomTiedScoresMatchReferenceForAllKAndValidLengths) {
  for (int64_t rows : {1, 3, 17}) {
    const int64_t n = 2 * uniform_int(1, 300) + 1;
    for (int64_t k : {int64_t{0}, int64_t{1}, uniform_int(2, n), n, n + uniform_int(1, 9)}) {
      for (int64_t distinct : {int64_t{3}, int64_t{1000000}}) {
        SCOPED_TRACE(testing::Message()
                     << "rows " << rows << " n " << n << " k " << k << " levels " << distinct);
        const Tensor scores = tied_scores(rows, n, distinct);
        expect_same_as_reference(scores, k, nullptr);
        std::vector<int32_t> lens(static_cast<size_t>(rows));
        for (auto& l : lens)
          l = static_cast<int32_t>(uniform_int(0, 3) == 0 ? uniform_int(0, 1) * n
                                                          : uniform_int(0, n));
        const Tensor valid = Tensor::wrap(lens.data(), {rows}, DType::kI32);
        expect_same_as_reference(scores, k, &valid);
      }
    }
  }
}

TEST_F(TopkTest, LongRowsLikeTheIndexerMatchReference) {
  const int64_t rows = 3, n = 20011, k = 2048;
  Tensor scores = ops_test::strided_f32({rows, n}, 1, 4);
  scores.copy_from(random({rows, n}, DType::kF32, -10, 10));
  // Sprinkle exact duplicates of the k-th order statistic region.
  for (int64_t r = 0; r < rows; ++r) {
    for (int rep = 0; rep < 200; ++rep) {
      scores.data<float>()[r * scores.stride(0) + uniform_int(0, n - 1)] =
          scores.data<float>()[r * scores.stride(0) + uniform_int(0, n - 1)];
    }
  }
  std::vector<int32_t> lens = {static_cast<int32_t>(n), static_cast<int32_t>(uniform_int(k, n)),
                               static_cast<int32_t>(uniform_int(1, k))};
  const Tensor valid = Tensor::wrap(lens.data(), {rows}, DType::kI32);
  expect_same_as_reference(scores, k, &valid);
}

TEST_F(TopkTest, MalformedArgumentsThrow) {
  const Tensor scores = random({2, 5});
  Tensor indices = Tensor::empty({2, 3}, DType::kI32);
  EXPECT_THROW(topk(scores, -1, nullptr, indices, nullptr), Error);
  EXPECT_THROW(topk(scores, 4, nullptr, indices, nullptr), Error);
  std::vector<int32_t> too_long = {5, 6};
  const Tensor bad_len = Tensor::wrap(too_long.data(), {2}, DType::kI32);
  EXPECT_THROW(topk(scores, 3, &bad_len, indices, nullptr), Error);
  std::vector<int32_t> negative = {-1, 2};
  const Tensor neg_len = Tensor::wrap(negative.data(), {2}, DType::kI32);
  EXPECT_THROW(topk(scores, 3, &neg_len, indices, nullptr), Error);
  const Tensor i64_len = Tensor::zeros({2}, DType::kI64);
  EXPECT_THROW(topk(scores, 3, &i64_len, indices, nullptr), Error);
  Tensor i64_indices = Tensor::empty({2, 3}, DType::kI64);
  EXPECT_THROW(topk(scores, 3, nullptr, i64_indices, nullptr), Error);
  Tensor bad_values = Tensor::empty({2, 4}, DType::kF32);
  EXPECT_THROW(topk(scores, 3, nullptr, indices, &bad_values), Error);
  EXPECT_THROW(topk(random({2, 5}, DType::kBF16), 3, nullptr, indices, nullptr), Error);
}

}  // namespace
}  // namespace ctxpar::kernels
