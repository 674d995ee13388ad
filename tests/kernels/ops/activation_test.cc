#include "ctxpar/kernels/activation.h"

#include <gtest/gtest.h>

#include <vector>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/error.h"
#include "ctxpar/core/thread_pool.h"
#include "ctxpar/kernels/activation_kernel.h"
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

// Every vector variant the CPU has, on row lengths around the vector widths and with gates
// far past the exp2 range at both ends (silu saturates to 0 and to the identity there).
TEST_F(ActivationTest, EveryIsaMatchesReference) {
  std::vector<Isa> isas = {Isa::kScalar};
  if (active_isa() >= Isa::kAvx2) isas.push_back(Isa::kAvx2);
  if (active_isa() >= Isa::kAvx512) isas.push_back(Isa::kAvx512);
  for (Isa isa : isas) {
    for (int64_t inter :
         {int64_t{1}, int64_t{7}, int64_t{16}, int64_t{33}, 2 * uniform_int(40, 500) + 1}) {
      SCOPED_TRACE(testing::Message() << isa_name(isa) << " I " << inter);
      Tensor x = random({2, 2 * inter}, DType::kF32, -20, 20);
      x.data<float>()[0] = -200.0f;  // e^200 overflows f32
      x.data<float>()[inter > 1 ? 1 : 0] = 150.0f;
      Tensor expected = Tensor::empty({2, inter}, DType::kF32);
      silu_and_mul_reference(x, expected);
      Tensor y = Tensor::empty({2, inter}, DType::kF32);
      y.fill_bytes(0xff);
      for (int64_t t = 0; t < 2; ++t) {
        const float* gate = x.data<float>() + t * 2 * inter;
        detail::silu_mul_kernel(isa)(gate, gate + inter, inter, y.data<float>() + t * inter);
      }
      EXPECT_TRUE(ops_test::all_finite(y));
      EXPECT_LE(ops_test::relative_error(y, expected), 1e-5);
    }
  }
}

// Rows split over pools of 2 and 3 threads give the one-thread result bit for bit.
TEST_F(ActivationTest, PooledRowsMatchOneThread) {
  const int64_t tokens = uniform_int(2, 40), inter = 2 * uniform_int(5, 300) + 1;
  const Tensor x = random({tokens, 2 * inter}, DType::kF32, -8, 8);
  Tensor expected = Tensor::empty({tokens, inter}, DType::kF32);
  silu_and_mul(x, expected);
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    Tensor y = Tensor::empty({tokens, inter}, DType::kF32);
    y.fill_bytes(0xff);
    silu_and_mul(x, y, &pool);
    EXPECT_EQ(ops_test::relative_error(y, expected), 0.0) << threads << " threads";
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
