#include "ctxpar/model/weight_slice.h"

#include <gtest/gtest.h>

#include <string>

#include "ctxpar/core/error.h"
#include "model/test_util.h"

namespace ctxpar::model {
namespace {

using testing::random_tensor;
using testing::same_bytes;
using testing::uniform_int;

// What rank `rank` of `parts` should hold, built from core Tensor views (an oracle that
// shares no code with copy_slice): rows [rank·p, (rank+1)·p) of the (padded) dim.
Tensor expected_part(const Tensor& full, int dim, int64_t rank, int64_t parts, bool padded) {
  const int64_t n = full.size(dim);
  const int64_t p = padded ? (n + parts - 1) / parts : n / parts;
  Shape shape = full.shape();
  shape[dim] = p;
  Tensor out = Tensor::zeros(shape, full.dtype());
  const int64_t begin = std::min(n, rank * p), end = std::min(n, (rank + 1) * p);
  if (end > begin) out.slice(dim, 0, end - begin).copy_from(full.slice(dim, begin, end));
  return out;
}

Shape random_shape(std::mt19937_64& rng, int min_dims) {
  Shape s(static_cast<size_t>(uniform_int(rng, min_dims, 4)));
  for (auto& d : s) d = uniform_int(rng, 1, 9);
  return s;
}

TEST(WeightSlice, PartsMatchViewsForEveryDimAndPartCount) {
  CTXPAR_SEEDED_RNG(rng);
  for (int trial = 0; trial < 60; ++trial) {
    const Shape shape = random_shape(rng, 1);
    const int dim = static_cast<int>(uniform_int(rng, 0, static_cast<int64_t>(shape.size()) - 1));
    // A part count that divides the dim: a divisor drawn at random (1, 3, 5... included).
    std::vector<int64_t> divisors;
    for (int64_t k = 1; k <= shape[dim]; ++k)
      if (shape[dim] % k == 0) divisors.push_back(k);
    const int64_t parts = divisors[uniform_int(rng, 0, static_cast<int64_t>(divisors.size()) - 1)];
    const Tensor full = random_tensor(shape, DType::kF32, rng);
    for (int64_t r = 0; r < parts; ++r) {
      SCOPED_TRACE(::testing::Message()
                   << full.describe() << " dim " << dim << " part " << r << "/" << parts);
      const Tensor got =
          copy_slice(full.raw(), DType::kF32, shape, Slice::part(dim, r, parts), DType::kF32, "w");
      EXPECT_TRUE(same_bytes(got, expected_part(full, dim, r, parts, false)));
    }
  }
}

TEST(WeightSlice, PaddedPartsZeroTheRowsPastTheEnd) {
  CTXPAR_SEEDED_RNG(rng);
  for (int trial = 0; trial < 60; ++trial) {
    const Shape shape = random_shape(rng, 1);
    const int dim = static_cast<int>(uniform_int(rng, 0, static_cast<int64_t>(shape.size()) - 1));
    const int64_t parts = uniform_int(rng, 1, 7);  // need not divide: that is the point
    const Tensor full = random_tensor(shape, DType::kF32, rng);
    int64_t rows_seen = 0;
    for (int64_t r = 0; r < parts; ++r) {
      SCOPED_TRACE(::testing::Message()
                   << full.describe() << " dim " << dim << " padded part " << r << "/" << parts);
      const Tensor got = copy_slice(full.raw(), DType::kF32, shape,
                                    Slice::padded_part(dim, r, parts), DType::kF32, "embed");
      EXPECT_EQ(got.size(dim), padded_extent(shape[dim], parts) / parts);
      EXPECT_TRUE(same_bytes(got, expected_part(full, dim, r, parts, true)));
      rows_seen += got.size(dim);
    }
    EXPECT_EQ(rows_seen, padded_extent(shape[dim], parts));
    EXPECT_EQ(rows_seen % parts, 0);
    EXPECT_GE(rows_seen, shape[dim]);
    EXPECT_LT(rows_seen - shape[dim], parts);
  }
}

TEST(WeightSlice, ConvertsBetweenFloatDtypesOnTheWay) {
  CTXPAR_SEEDED_RNG(rng);
  const DType floats[] = {DType::kF32, DType::kBF16, DType::kF16};
  for (DType from : floats) {
    for (DType to : floats) {
      const Shape shape{uniform_int(rng, 1, 7), 3 * uniform_int(rng, 1, 5)};
      const Tensor full = random_tensor(shape, from, rng);
      const Tensor got = copy_slice(full.raw(), from, shape, Slice::row_parallel(2, 3), to, "w");
      // Oracle: core's converting copy of the same view.
      EXPECT_TRUE(same_bytes(got, expected_part(full, 1, 2, 3, false).to(to)))
          << dtype_name(from) << " -> " << dtype_name(to);
    }
  }
}

TEST(WeightSlice, RefusesWhatDoesNotFitNamingTheNumbers) {
  const Shape shape{10, 7};
  Tensor full = Tensor::zeros(shape, DType::kF32);
  auto message = [&](const Slice& s, DType want = DType::kF32, DType have = DType::kF32) {
    try {
      copy_slice(full.raw(), have, shape, s, want, "layers.0.mlp.down_proj.weight");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string msg = message(Slice::row_parallel(0, 3));
  EXPECT_NE(msg.find("layers.0.mlp.down_proj.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("size 7"), std::string::npos) << msg;
  EXPECT_NE(msg.find("3 parts"), std::string::npos) << msg;
  msg = message(Slice::part(2, 0, 2));
  EXPECT_NE(msg.find("no dimension 2"), std::string::npos) << msg;
  msg = message(Slice::full(), DType::kF32, DType::kI32);
  EXPECT_NE(msg.find("int32"), std::string::npos) << msg;
  EXPECT_THROW(Slice::part(0, 3, 3), Error);
  EXPECT_THROW(Slice::part(0, -1, 3), Error);
  EXPECT_THROW(Slice::part(0, 0, 0), Error);
  EXPECT_THROW(Slice::part(-1, 0, 2), Error);
  // Integers are copied as they are when the dtype matches.
  Tensor ints = Tensor::empty({4, 3}, DType::kI64);
  for (int64_t i = 0; i < 12; ++i) ints.data<int64_t>()[i] = i * 1000003;
  const Tensor part =
      copy_slice(ints.raw(), DType::kI64, {4, 3}, Slice::column_parallel(1, 2), DType::kI64, "ids");
  EXPECT_TRUE(same_bytes(part, ints.slice(0, 2, 4).contiguous()));
}

}  // namespace
}  // namespace ctxpar::model
