#include "ctxpar/kernels/linear_int8.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/error.h"
#include "ctxpar/kernels/linear.h"
#include "ctxpar/kernels/linear_int8_direct.h"
#include "kernels/ops/ops_test_util.h"

namespace ctxpar::kernels {
namespace {

class Int8LinearTest : public ops_test::SeededTest {
 protected:
  Tensor random_int8(const Shape& shape) {
    Tensor t = Tensor::empty(shape, DType::kI8);
    for (int64_t i = 0; i < t.numel(); ++i)
      t.data<int8_t>()[i] = static_cast<int8_t>(uniform_int(-127, 127));
    return t;
  }
  Tensor reference(const Tensor& x, const Int8Linear& l) {
    Tensor y = Tensor::empty({x.size(0), l.out_features()}, DType::kF32);
    int8_linear_reference(x, l.weight(), l.weight_scale(),
                          l.input_smooth() ? &*l.input_smooth() : nullptr,
                          l.bias() ? &*l.bias() : nullptr, y);
    return y;
  }
};

TEST_F(Int8LinearTest, MatchesReferenceOfTheDocumentedMath) {
  // 32 vs 33 tokens straddles a token chunk of ctxpar's own kernel (used where oneDNN's int8 is
  // inexact); every case also runs with rows split over a pool.
  ThreadPool pool(3);
  for (int64_t tokens : {1, 3, 17, 32, 33, 40}) {
    for (bool smooth : {false, true}) {
      for (bool with_bias : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << "tokens " << tokens << " smooth " << smooth << " bias " << with_bias);
        const int64_t in = 2 * uniform_int(10, 150) + 1, out = 2 * uniform_int(10, 100) + 1;
        std::optional<Tensor> smoothing, bias;
        if (smooth) smoothing = random({in}, DType::kF32, 0.25, 4);
        if (with_bias) bias = random({out});
        const Int8Linear linear(random_int8({out, in}), random({out}, DType::kF32, 1e-3, 2e-2),
                                smoothing, bias);
        const Tensor x = random({tokens, in}, DType::kF32, -3, 3);
        Tensor y = Tensor::empty({tokens, out}, DType::kF32);
        y.fill_bytes(0xff);
        linear.forward(x, y);
        EXPECT_TRUE(ops_test::all_finite(y));
        const Tensor expected = reference(x, linear);
        EXPECT_LE(ops_test::relative_error(y, expected), 1e-5);
        y.fill_bytes(0xff);
        linear.forward(x, y, pool);
        EXPECT_TRUE(ops_test::all_finite(y));
        EXPECT_LE(ops_test::relative_error(y, expected), 1e-5);
      }
    }
  }
}

TEST_F(Int8LinearTest, ApproximatesTheFloatProductItQuantizes) {
  // y ≈ (x / smooth) · (w · weight_scale)ᵀ up to the int8 rounding of x: checks the math
  // means what the header says, independently of the int8 reference.
  const int64_t tokens = 17, in = 301, out = 83;
  const Tensor w = random_int8({out, in});
  const Tensor w_scale = random({out}, DType::kF32, 1e-3, 2e-2);
  const Tensor smooth = random({in}, DType::kF32, 0.5, 2);
  const Tensor bias = random({out});
  const Int8Linear linear(w, w_scale, smooth, bias);
  const Tensor x = random({tokens, in});
  Tensor w_float = Tensor::empty({out, in}, DType::kF32);
  Tensor x_smoothed = Tensor::empty({tokens, in}, DType::kF32);
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t i = 0; i < in; ++i) {
      w_float.data<float>()[o * in + i] =
          static_cast<float>(w.data<int8_t>()[o * in + i] * w_scale.data<float>()[o]);
    }
  }
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t i = 0; i < in; ++i) {
      x_smoothed.data<float>()[t * in + i] = x.data<float>()[t * in + i] / smooth.data<float>()[i];
    }
  }
  Tensor expected = Tensor::empty({tokens, out}, DType::kF32);
  linear_reference(x_smoothed, w_float, &bias, expected);
  EXPECT_LE(ops_test::relative_error(linear.forward(x), expected), 2e-2);
}

TEST_F(Int8LinearTest, QuantizePerTokenUsesTheFullRangeAndRoundsToNearest) {
  const int64_t tokens = 17, in = 2 * uniform_int(20, 200) + 1;
  const Tensor x = random({tokens, in}, DType::kF32, -5, 5);
  const Tensor smooth = random({in}, DType::kF32, 0.5, 2);
  Tensor q = Tensor::empty({tokens, in}, DType::kI8);
  Tensor scale = Tensor::empty({tokens}, DType::kF32);
  quantize_per_token(x, &smooth, q, scale);
  for (int64_t t = 0; t < tokens; ++t) {
    int max_abs = 0;
    const double sx = scale.data<float>()[t];
    for (int64_t i = 0; i < in; ++i) {
      const int qi = q.data<int8_t>()[t * in + i];
      max_abs = std::max(max_abs, std::abs(qi));
      // xs in f32 as the math says; the f32 division by sx may be off by half an ulp of 127.
      const double xs = x.data<float>()[t * in + i] / smooth.data<float>()[i];
      ASSERT_LE(std::fabs(qi * sx - xs), sx * (0.5 + 2e-5)) << "token " << t << " col " << i;
    }
    EXPECT_EQ(max_abs, 127) << "token " << t;
  }
}

TEST_F(Int8LinearTest, LongPrefillCrossesEveryTokenChunk) {
  // 300 tokens: several chunks of ctxpar's own kernel (32) and of oneDNN's int8 matmul (256).
  const int64_t tokens = 300, in = 2 * uniform_int(20, 60) + 1, out = 2 * uniform_int(20, 60) + 1;
  const Int8Linear linear(random_int8({out, in}), random({out}, DType::kF32, 1e-3, 1e-2),
                          random({in}, DType::kF32, 0.5, 2), random({out}));
  const Tensor x = random({tokens, in});
  const Tensor expected = reference(x, linear);
  ThreadPool pool(2);
  Tensor y = Tensor::empty({tokens, out}, DType::kF32);
  y.fill_bytes(0xff);
  linear.forward(x, y);
  EXPECT_LE(ops_test::relative_error(y, expected), 1e-5);
  y.fill_bytes(0xff);
  linear.forward(x, y, pool);
  EXPECT_LE(ops_test::relative_error(y, expected), 1e-5);
}

TEST_F(Int8LinearTest, AllZeroTokenGivesTheBias) {
  const int64_t in = 37, out = 11;
  const Tensor bias = random({out});
  const Int8Linear linear(random_int8({out, in}), random({out}, DType::kF32, 1e-3, 1e-2),
                          std::nullopt, bias);
  Tensor x = random({3, in});
  x.select(0, 1).fill(0.0);
  const Tensor y = linear.forward(x);
  for (int64_t o = 0; o < out; ++o) EXPECT_EQ(y.data<float>()[out + o], bias.data<float>()[o]);
  EXPECT_LE(ops_test::relative_error(y, reference(x, linear)), 1e-5);
}

TEST_F(Int8LinearTest, StridedInputAndOutput) {
  const int64_t tokens = 17, in = 129, out = 45;
  const Int8Linear linear(random_int8({out, in}), random({out}, DType::kF32, 1e-3, 1e-2),
                          random({in}, DType::kF32, 0.5, 2));
  Tensor x = ops_test::strided_f32({tokens, in}, 4, 11);
  x.copy_from(random({tokens, in}));
  Tensor y = ops_test::strided_f32({tokens, out}, 2, 5);
  linear.forward(x, y);
  EXPECT_TRUE(ops_test::all_finite(y));
  EXPECT_LE(ops_test::relative_error(y, reference(x, linear)), 1e-5);
}

TEST_F(Int8LinearTest, ExactForFullRangeOperands) {
  // All +127 activations against ±127 weights: the case that saturates 16-bit pair sums.
  // Integer results are exact (and so is the final scaling by 1·1), so compare exactly.
  const int64_t in = 2 * uniform_int(100, 500) + 1, out = 13;
  Tensor w = Tensor::empty({out, in}, DType::kI8);
  for (int64_t i = 0; i < w.numel(); ++i) w.data<int8_t>()[i] = uniform_int(0, 3) ? 127 : -127;
  Tensor ones = Tensor::empty({out}, DType::kF32);
  ones.fill(1.0);
  const Int8Linear linear(w, ones, std::nullopt);
  for (int64_t tokens : {1, 3, 17, 33}) {
    SCOPED_TRACE(testing::Message() << "tokens " << tokens);
    Tensor x = Tensor::empty({tokens, in}, DType::kF32);
    x.fill(127.0);  // amax 127 → scale 1, q = 127
    const Tensor y = linear.forward(x);
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t o = 0; o < out; ++o) {
        int64_t expected = 0;
        for (int64_t i = 0; i < in; ++i) expected += 127 * w.data<int8_t>()[o * in + i];
        ASSERT_EQ(y.data<float>()[t * out + o], static_cast<float>(expected)) << t << "," << o;
      }
    }
  }
}

TEST_F(Int8LinearTest, KernelVariantsAreExact) {
  // 7 and 8 tokens exercise every token block (3, 2, 1); odd `out` the single-row tail.
  for (int64_t tokens : {1, 2, 7, 8}) {
    SCOPED_TRACE(testing::Message() << "tokens " << tokens);
    const int64_t in = 2 * uniform_int(20, 300) + 1, out = 2 * uniform_int(3, 20) + 1;
    const Tensor q = random_int8({tokens, in}), w = random_int8({out, in});
    const Tensor scale = random({out}, DType::kF32, 0.5, 2);
    using Variant = void (*)(const int8_t*, int64_t, int64_t, const int8_t*, int64_t, int64_t,
                             int64_t, const float*, float*, int64_t);
    std::vector<std::pair<const char*, Variant>> variants = {
        {"portable", &detail::int8_weight_matmul_portable}};
    if (active_isa() >= Isa::kAvx2) variants.emplace_back("avx2", &detail::int8_weight_matmul_avx2);
    for (const auto& [name, fn] : variants) {
      SCOPED_TRACE(name);
      Tensor y = Tensor::empty({tokens, out}, DType::kF32);
      y.fill_bytes(0xff);
      fn(q.data<int8_t>(), in, tokens, w.data<int8_t>(), in, in, out, scale.data<float>(),
         y.data<float>(), out);
      for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t o = 0; o < out; ++o) {
          int32_t acc = 0;
          for (int64_t i = 0; i < in; ++i)
            acc += q.data<int8_t>()[t * in + i] * w.data<int8_t>()[o * in + i];
          ASSERT_EQ(y.data<float>()[t * out + o], static_cast<float>(acc) * scale.data<float>()[o]);
        }
      }
    }
  }
}

TEST_F(Int8LinearTest, MalformedArgumentsThrow) {
  const Tensor w = random_int8({6, 8});
  const Tensor s = random({6}, DType::kF32, 0.1, 1);
  EXPECT_THROW(Int8Linear(random({6, 8}), s, std::nullopt), Error);
  EXPECT_THROW(Int8Linear(w, random({8}), std::nullopt), Error);
  EXPECT_THROW(Int8Linear(w, random({6}, DType::kBF16), std::nullopt), Error);
  EXPECT_THROW(Int8Linear(w, s, random({6})), Error);
  Tensor zero_smooth = random({8}, DType::kF32, 0.5, 1);
  zero_smooth.data<float>()[3] = 0;
  EXPECT_THROW(Int8Linear(w, s, zero_smooth), Error);
  EXPECT_THROW(Int8Linear(w, s, std::nullopt, random({8})), Error);

  const Int8Linear linear(w, s, std::nullopt);
  Tensor y = Tensor::empty({2, 6}, DType::kF32);
  EXPECT_THROW(linear.forward(random({2, 7}), y), Error);
  EXPECT_THROW(linear.forward(random({3, 8}), y), Error);
  Tensor q = Tensor::empty({2, 8}, DType::kI8), bad_scale = Tensor::empty({3}, DType::kF32);
  EXPECT_THROW(quantize_per_token(random({2, 8}), nullptr, q, bad_scale), Error);
}

}  // namespace
}  // namespace ctxpar::kernels
