#include "ctxpar/kernels/activation.h"

#include <gtest/gtest.h>

#include "ctxpar/core/error.h"
#include "kernels/ops/ops_test_util.h"

namespace ctxpar::kernels {
namespace {

class ActivationTest : public ops_test::SeededTest {};

TEST_F(ActivationTest, SiluAndMulMatchesReference) {
  for (int64_t tokens : {1, 3, 17}) {
    const int64_t inter = 2 * uniform_int(1, 700) + 1;
    SCOPED_TRACE(testing::Message() << "tokens " << tokens << " I " << inter);
    // Wide range: silu saturates to 0 and to identity at the ends.
    const Tensor x = random({tokens, 2 * inter}, DType::kF32, -20, 20);
    Tensor y = Tensor::empty({tokens, inter}, DType::kF32);
    y.fill_bytes(0xff);
    silu_and_mul(x, y);
    Tensor expected = Tensor::empty({tokens, inter}, DType::kF32);
    silu_and_mul_reference(x, expected);
    EXPECT_TRUE(ops_test::all_finite(y));
    EXPECT_LE(ops_test::relative_error(y, expected), 1e-5);
  }
}

TEST_F(ActivationTest, SiluAndMulOnStridedRowsAndInPlace) {
  const int64_t tokens = 17, inter = 2 * uniform_int(5, 300) + 1;
  Tensor x = ops_test::strided_f32({tokens, 2 * inter}, 3, 8);
  x.copy_from(random({tokens, 2 * inter}, DType::kF32, -6, 6));
  Tensor expected = Tensor::empty({tokens, inter}, DType::kF32);
  silu_and_mul_reference(x, expected);
  Tensor gate_half = x.slice(1, 0, inter);
  silu_and_mul(x, gate_half);
  EXPECT_LE(ops_test::relative_error(gate_half, expected), 1e-5);
}

TEST_F(ActivationTest, MalformedShapesThrow) {
  Tensor y = Tensor::empty({3, 4}, DType::kF32);
  EXPECT_THROW(silu_and_mul(random({3, 9}), y), Error);
  EXPECT_THROW(silu_and_mul(random({3, 10}), y), Error);
  EXPECT_THROW(silu_and_mul(random({2, 8}), y), Error);
  EXPECT_THROW(silu_and_mul(random({3, 8}, DType::kBF16), y), Error);
  EXPECT_THROW(silu_and_mul(random({3, 2, 4}), y), Error);
}

}  // namespace
}  // namespace ctxpar::kernels
