#include <gtest/gtest.h>

#include <random>

#include "ctxpar/core/error.h"
#include "ctxpar/core/tensor.h"

namespace ctxpar {
namespace {

Tensor random_f32(const Shape& shape, std::mt19937& rng) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  std::normal_distribution<float> d;
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

TEST(Tensor, OwningStorageIsAlignedAndCounted) {
  const auto before = allocation_stats();
  {
    Tensor t = Tensor::empty({3, 5, 7}, DType::kBF16);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % Tensor::kAlignment, 0u);
    EXPECT_EQ(t.nbytes(), 3u * 5 * 7 * 2);
    EXPECT_EQ(allocation_stats().live_bytes - before.live_bytes, 3 * 5 * 7 * 2);
    Tensor v = t.slice(0, 1, 2);  // a view does not allocate
    EXPECT_EQ(allocation_stats().live_bytes - before.live_bytes, 3 * 5 * 7 * 2);
  }
  EXPECT_EQ(allocation_stats().live_bytes, before.live_bytes);
}

TEST(Tensor, SliceSelectAndViewShareStorage) {
  std::mt19937 rng(std::random_device{}());
  Tensor t = random_f32({4, 6, 5}, rng);
  Tensor s = t.slice(1, 2, 5);  // [4, 3, 5]
  EXPECT_EQ(s.shape(), (Shape{4, 3, 5}));
  EXPECT_FALSE(s.is_contiguous());
  for (int64_t a = 0; a < 4; ++a)
    for (int64_t b = 0; b < 3; ++b)
      for (int64_t c = 0; c < 5; ++c)
        EXPECT_EQ(s.item_as_double({a, b, c}), t.item_as_double({a, b + 2, c}));
  Tensor sel = t.select(0, 3);  // [6, 5]
  EXPECT_EQ(sel.item_as_double({1, 4}), t.item_as_double({3, 1, 4}));
  Tensor v = t.view({24, -1});
  EXPECT_EQ(v.shape(), (Shape{24, 5}));
  v.data<float>()[7] = 42.0f;
  EXPECT_EQ(t.data<float>()[7], 42.0f);
  EXPECT_THROW(s.view({60}), Error);
}

TEST(Tensor, StridedCopyAndConversion) {
  std::mt19937 rng(std::random_device{}());
  Tensor t = random_f32({5, 9}, rng);
  Tensor s = t.slice(1, 3, 8);          // [5, 5] strided
  Tensor c = s.to(DType::kBF16);        // converting copy of a strided view
  Tensor back = c.to(DType::kF32);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      const double x = t.item_as_double({i, j + 3});
      EXPECT_NEAR(back.item_as_double({i, j}), x, std::abs(x) * 1.0 / 256);
      EXPECT_EQ(c.item_as_double({i, j}), static_cast<double>(to_float(bf16(static_cast<float>(x)))));
    }
  Tensor ints = Tensor::empty({3}, DType::kI32);
  EXPECT_THROW(ints.copy_from(Tensor::zeros({3}, DType::kF32)), Error);
  EXPECT_THROW(t.copy_from(Tensor::zeros({9, 5}, DType::kF32)), Error);
}

TEST(Tensor, ErrorsNameTheBadValue) {
  Tensor t = Tensor::zeros({2, 3}, DType::kF32);
  try {
    t.slice(1, 0, 4);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[0, 4)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("size 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(t.data<bf16>(), Error);
  EXPECT_THROW(Tensor::empty({2, -1}, DType::kF32), Error);
}

TEST(Tensor, FillWritesEveryElementOfAStridedView) {
  Tensor t = Tensor::zeros({4, 4}, DType::kF16);
  t.slice(1, 1, 3).fill(2.5);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j)
      EXPECT_EQ(t.item_as_double({i, j}), (j == 1 || j == 2) ? 2.5 : 0.0);
}

}  // namespace
}  // namespace ctxpar
