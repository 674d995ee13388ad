// batched_matmul against its double reference on both paths (the GEMVs for decode-sized bf16
// products, oneDNN otherwise), both weight layouts MLA reads in place (W_UK: [k, n] rows,
// W_UV: [n, k] rows through a transpose), strided views, with and without a pool; and the
// transposed GEMV of every ISA against the same reference.
#include "ctxpar/kernels/batched_matmul.h"

#include <gtest/gtest.h>

#include <vector>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/error.h"
#include "ctxpar/core/half.h"
#include "ctxpar/kernels/linear_gemv.h"
#include "ops_test_util.h"

namespace ctxpar::kernels {
namespace {

using ops_test::relative_error;

class BatchedMatmulTest : public ops_test::SeededTest {
 protected:
  // w [batch, k, n] as a view of a kv_b-like buffer [batch, rows_per_batch, wide], in one of
  // the two layouts.
  Tensor weight(int64_t batch, int64_t k, int64_t n, DType dtype, bool rows_of_k) {
    const int64_t extra = uniform_int(0, 3), wide_pad = uniform_int(0, 5);
    if (rows_of_k) {  // [batch, n + extra, k + pad] sliced and transposed: stride(1) == 1
      Tensor buf = random({batch, n + extra, k + wide_pad}, dtype);
      return buf.slice(1, extra, extra + n).slice(2, 0, k).transpose(1, 2);
    }
    Tensor buf = random({batch, k + extra, n + wide_pad}, dtype);  // stride(2) == 1
    return buf.slice(1, extra, extra + k).slice(2, 0, n);
  }
};

TEST_F(BatchedMatmulTest, MatchesTheReferenceOnEveryPathAndLayout) {
  ThreadPool pool2(2), pool3(3);
  for (int rep = 0; rep < 60; ++rep) {
    const int64_t batch = uniform_int(1, 7), m = uniform_int(1, 12), k = uniform_int(1, 300),
                  n = uniform_int(1, 300);
    const DType dtype = rep % 4 == 3 ? DType::kF32 : DType::kBF16;
    const bool rows_of_k = rep % 2 == 0;
    const int pool_kind = static_cast<int>(uniform_int(0, 2));
    SCOPED_TRACE(testing::Message() << "batch " << batch << " m " << m << " k " << k << " n " << n
                                    << " " << dtype_name(dtype) << (rows_of_k ? " [n,k]" : " [k,n]")
                                    << " pool " << pool_kind);
    const Tensor w = weight(batch, k, n, dtype, rows_of_k);
    // a [batch, m, k] as MLA's q.transpose(0, 1): token-major storage, batch stride < m's.
    const Tensor a = random({m, batch, k + 2}).slice(2, 1, k + 1).transpose(0, 1);
    Tensor c_storage = Tensor::empty({m, batch, n}, DType::kF32);
    c_storage.fill_bytes(0xff);  // NaN: an element left unwritten fails all_finite
    Tensor c = c_storage.transpose(0, 1);
    Tensor want = Tensor::empty({batch, m, n}, DType::kF32);
    batched_matmul_reference(a, w, want);
    if (pool_kind == 0) {
      batched_matmul(a, w, c);
    } else {
      batched_matmul(a, w, c, pool_kind == 1 ? pool2 : pool3);
    }
    ASSERT_TRUE(ops_test::all_finite(c)) << "an element of c was not written";
    EXPECT_LT(relative_error(c, want), 1e-5);
  }
}

TEST_F(BatchedMatmulTest, TransposedGemvOfEveryIsaMatchesTheReference) {
  std::vector<Isa> isas = {Isa::kScalar};
  if (active_isa() >= Isa::kAvx2) isas.push_back(Isa::kAvx2);
  if (active_isa() >= Isa::kAvx512) isas.push_back(Isa::kAvx512);
  for (Isa isa : isas) {
    for (int rep = 0; rep < 12; ++rep) {
      const int64_t tokens = uniform_int(1, detail::kGemvMaxTokens), k = uniform_int(1, 70),
                    n = uniform_int(1, 200), ldw = n + uniform_int(0, 9);
      SCOPED_TRACE(testing::Message() << isa_name(isa) << " tokens " << tokens << " k " << k
                                      << " n " << n << " ldw " << ldw);
      const Tensor w = random({k, ldw}, DType::kBF16);
      Tensor x = random({tokens, k});
      for (int64_t i = 0; i < x.numel(); ++i) {
        x.data<float>()[i] = bf16::to_f32(bf16::from_f32(x.data<float>()[i]));
      }
      Tensor y = Tensor::empty({tokens, n + 3}, DType::kF32);
      y.fill_bytes(0xff);
      detail::gemv_t_bf16(isa, {x.data<float>(), tokens, k, static_cast<const uint16_t*>(w.raw()),
                                ldw, n, y.data<float>(), n + 3});
      Tensor want = Tensor::empty({1, tokens, n}, DType::kF32);
      batched_matmul_reference(x.unsqueeze(0), w.slice(1, 0, n).unsqueeze(0), want);
      EXPECT_LT(relative_error(y.slice(1, 0, n).unsqueeze(0), want), 1e-5);
      for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t j = n; j < n + 3; ++j) {
          EXPECT_TRUE(std::isnan(y.data<float>()[t * (n + 3) + j])) << "wrote past column n";
        }
      }
    }
  }
}

TEST_F(BatchedMatmulTest, EmptyDimensionsAndBadShapes) {
  ThreadPool pool(2);
  const Tensor w = random({3, 0, 5}, DType::kBF16);
  const Tensor a = random({3, 2, 0});
  Tensor c = Tensor::empty({3, 2, 5}, DType::kF32);
  c.fill_bytes(0xff);
  batched_matmul(a, w, c, pool);  // k = 0: sums of nothing
  for (int64_t i = 0; i < c.numel(); ++i) EXPECT_EQ(c.data<float>()[i], 0.0f);
  Tensor bad = Tensor::empty({3, 2, 4}, DType::kF32);
  const Tensor w2 = random({3, 7, 5}, DType::kBF16);
  EXPECT_THROW(batched_matmul(random({3, 2, 7}), w2, bad, pool), Error);
}

}  // namespace
}  // namespace ctxpar::kernels
