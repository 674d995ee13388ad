#include "ctxpar/kernels/norm.h"

#include <gtest/gtest.h>

#include "ctxpar/core/error.h"
#include "kernels/ops/ops_test_util.h"

namespace ctxpar::kernels {
namespace {

class NormTest : public ops_test::SeededTest {
 protected:
  Tensor rms_reference(const Tensor& x, const Tensor& w, double eps) {
    Tensor y = Tensor::empty(x.shape(), DType::kF32);
    rms_norm_reference(x, w, eps, y);
    return y;
  }
};

TEST_F(NormTest, RmsNormMatchesReference) {
  for (int64_t rows : {1, 3, 17}) {
    for (DType wtype : {DType::kF32, DType::kBF16}) {
      const int64_t d = uniform_int(0, 1) ? 2 * uniform_int(1, 600) + 1 : uniform_int(1, 7);
      SCOPED_TRACE(testing::Message()
                   << "rows " << rows << " d " << d << " weight " << dtype_name(wtype));
      const Tensor x = random({rows, d}, DType::kF32, -4, 4);
      const Tensor w = random({d}, wtype, 0.5, 1.5);
      const float eps = static_cast<float>(uniform(1e-6, 1e-2));
      Tensor y = Tensor::empty({rows, d}, DType::kF32);
      y.fill_bytes(0xff);
      rms_norm(x, w, eps, y);
      EXPECT_TRUE(ops_test::all_finite(y));
      EXPECT_LE(ops_test::relative_error(y, rms_reference(x, w, eps)), 1e-5);
    }
  }
}

TEST_F(NormTest, RmsNormOnStridedPerHeadViewsAndInPlace) {
  // [tokens, heads, head_dim] views into a wider qkv row, as a per-head q/k norm sees them.
  const int64_t tokens = 17, heads = 3, head_dim = 2 * uniform_int(8, 70) + 1;
  Tensor qkv = random({tokens, heads * head_dim + 13}, DType::kF32, -2, 2);
  Tensor q = Tensor::wrap(qkv.data<float>() + 5, {tokens, heads, head_dim}, DType::kF32,
                          {heads * head_dim + 13, head_dim, 1});
  const Tensor w = random({head_dim}, DType::kBF16, 0.5, 1.5);
  const Tensor expected = rms_reference(q, w, 1e-6);
  const Tensor untouched_before = qkv.slice(1, 0, 5).clone();
  rms_norm(q, w, 1e-6f, q);  // in place
  EXPECT_LE(ops_test::relative_error(q, expected), 1e-5);
  EXPECT_EQ(ops_test::relative_error(qkv.slice(1, 0, 5), untouched_before), 0.0);
}

TEST_F(NormTest, AddRmsNormUpdatesResidualAndNormalizesIt) {
  for (int64_t rows : {1, 3, 17}) {
    const int64_t d = 2 * uniform_int(1, 500) + 1;
    SCOPED_TRACE(testing::Message() << "rows " << rows << " d " << d);
    Tensor residual = random({rows, d}, DType::kF32, -3, 3);
    const Tensor x = random({rows, d});
    const Tensor w = random({d}, DType::kF32, 0.5, 1.5);
    Tensor expected_residual = residual.clone();
    for (int64_t i = 0; i < rows * d; ++i) expected_residual.data<float>()[i] += x.data<float>()[i];
    Tensor y = Tensor::empty({rows, d}, DType::kF32);
    y.fill_bytes(0xff);
    add_rms_norm(residual, x, w, 1e-5f, y);
    // The sum is one f32 add per element: exact agreement.
    EXPECT_EQ(ops_test::relative_error(residual, expected_residual), 0.0);
    EXPECT_LE(ops_test::relative_error(y, rms_reference(expected_residual, w, 1e-5)), 1e-5);
  }
}

TEST_F(NormTest, LayerNormMatchesReferenceEvenWithALargeMean) {
  for (int64_t rows : {1, 3, 17}) {
    for (DType wtype : {DType::kF32, DType::kBF16}) {
      const int64_t d = 2 * uniform_int(1, 600) + 1;
      SCOPED_TRACE(testing::Message() << "rows " << rows << " d " << d);
      // Offset 50: E[x²] − E[x]² would lose most digits; two passes must not.
      const Tensor x = random({rows, d}, DType::kF32, 49, 51);
      const Tensor w = random({d}, wtype, 0.5, 1.5);
      const Tensor b = random({d}, wtype);
      Tensor y = ops_test::strided_f32({rows, d}, 1, 3);
      layer_norm(x, w, b, 1e-5f, y);
      Tensor expected = Tensor::empty({rows, d}, DType::kF32);
      layer_norm_reference(x, w, b, 1e-5, expected);
      EXPECT_TRUE(ops_test::all_finite(y));
      EXPECT_LE(ops_test::relative_error(y, expected), 1e-5);
    }
  }
}

TEST_F(NormTest, MalformedShapesThrow) {
  const Tensor x = random({3, 8});
  Tensor y = Tensor::empty({3, 8}, DType::kF32);
  Tensor residual = random({3, 8});
  EXPECT_THROW(rms_norm(x, random({7}), 1e-6f, y), Error);
  EXPECT_THROW(rms_norm(x, random({8}, DType::kF16), 1e-6f, y), Error);
  EXPECT_THROW(rms_norm(random({3, 8}, DType::kBF16), random({8}), 1e-6f, y), Error);
  Tensor y_wrong = Tensor::empty({3, 9}, DType::kF32);
  EXPECT_THROW(rms_norm(x, random({8}), 1e-6f, y_wrong), Error);
  Tensor residual_wrong = random({2, 8});
  EXPECT_THROW(add_rms_norm(residual_wrong, x, random({8}), 1e-6f, y), Error);
  EXPECT_THROW(layer_norm(x, random({8}), random({9}), 1e-6f, y), Error);
  Tensor storage = random({8, 3});
  const Tensor transposed = Tensor::wrap(storage.raw(), {3, 8}, DType::kF32, {1, 3});
  EXPECT_THROW(rms_norm(transposed, random({8}), 1e-6f, y), Error);
}

}  // namespace
}  // namespace ctxpar::kernels
