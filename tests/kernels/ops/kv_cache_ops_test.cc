#include "ctxpar/kernels/kv_cache_ops.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/core/fp8.h"
#include "ctxpar/core/half.h"
#include "kernels/ops/ops_test_util.h"

namespace ctxpar::kernels {
namespace {

class KvCacheOpsTest : public ops_test::SeededTest {};

// What a cache of `dtype` keeps of x.
float stored(float x, DType dtype) {
  if (dtype == DType::kBF16) return bf16::to_f32(bf16::from_f32(x));
  if (dtype == DType::kF8E4M3) return fp8_e4m3::to_f32(fp8_e4m3::from_f32(x));
  return x;
}

TEST_F(KvCacheOpsTest, WrittenRowsReadBackAsTheCacheDtypeRoundsThem) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF8E4M3}) {
    SCOPED_TRACE(dtype_name(dtype));
    const int64_t block = uniform_int(1, 5), blocks = uniform_int(2, 6);
    const int64_t heads = uniform_int(1, 3), d = uniform_int(1, 70);
    Tensor cache = Tensor::zeros({blocks, block, heads, d}, dtype);
    // Every slot written once, in a shuffled order, some tokens skipped (slot -1); values up
    // to ±600 so e4m3 saturates at ±448.
    std::vector<int64_t> order(static_cast<size_t>(blocks * block));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng_);
    const int64_t tokens = static_cast<int64_t>(order.size()) + 2;
    const Tensor rows = random({tokens, heads, d}, DType::kF32, -600, 600);
    Tensor slots = Tensor::empty({tokens}, DType::kI64);
    for (int64_t t = 0; t < tokens; ++t) {
      slots.data<int64_t>()[t] = t < 2 ? -1 : order[static_cast<size_t>(t - 2)];
    }
    write_cache_rows(rows, slots, cache);

    std::vector<int32_t> table(static_cast<size_t>(blocks));
    std::iota(table.begin(), table.end(), 0);
    Tensor back = Tensor::empty({blocks * block, heads, d}, DType::kF32);
    read_cache_rows(cache, table, 0, blocks * block, back);
    const float* in = rows.data<float>();
    const float* out = back.data<float>();
    const int64_t row = heads * d;
    for (int64_t t = 2; t < tokens; ++t) {
      const int64_t slot = order[static_cast<size_t>(t - 2)];
      for (int64_t i = 0; i < row; ++i) {
        const float x = in[t * row + i];
        const float want = stored(x, dtype);
        ASSERT_EQ(out[slot * row + i], want) << "token " << t << " element " << i;
        if (dtype == DType::kF8E4M3) {
          ASSERT_LE(std::abs(want), fp8_e4m3::kMax);
          if (std::abs(x) <= fp8_e4m3::kMax) {
            // Half a step: 2^-4 of the value at most, 2^-10 among the subnormals.
            ASSERT_LE(std::abs(want - x), std::max(std::abs(x) / 16, 0x1.0p-10f));
          }
        }
      }
    }

    // The new tokens' attention reads the values the cache keeps.
    const Tensor as_cached = at_cache_dtype(rows, cache);
    const std::vector<double> got = ops_test::to_doubles(as_cached);
    for (int64_t i = 0; i < rows.numel(); ++i) {
      ASSERT_EQ(got[static_cast<size_t>(i)], stored(in[i], dtype)) << "element " << i;
    }
  }
}

TEST_F(KvCacheOpsTest, BadCachesAndSlotsAreRejected) {
  const Tensor rows = random({2, 1, 8});
  Tensor slots = Tensor::empty({2}, DType::kI64);
  slots.data<int64_t>()[0] = 0;
  slots.data<int64_t>()[1] = 4;  // past a 2 × 2 cache
  Tensor cache = Tensor::zeros({2, 2, 1, 8}, DType::kF8E4M3);
  EXPECT_THROW(write_cache_rows(rows, slots, cache), Error);
  Tensor f16_cache = Tensor::zeros({2, 2, 1, 8}, DType::kF16);
  slots.data<int64_t>()[1] = 1;
  EXPECT_THROW(write_cache_rows(rows, slots, f16_cache), Error);
  EXPECT_THROW(at_cache_dtype(rows, f16_cache), Error);
}

}  // namespace
}  // namespace ctxpar::kernels
