#include "ctxpar/kernels/linear.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <thread>
#include <vector>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/error.h"
#include "ctxpar/kernels/linear_gemm.h"
#include "ctxpar/kernels/linear_gemv.h"
#include "ctxpar/kernels/linear_matmul_cache.h"
#include "kernels/ops/ops_test_util.h"

namespace ctxpar::kernels {
namespace {

class LinearTest : public ops_test::SeededTest {
 protected:
  // Runs `linear` on x into a NaN-poisoned y (on `pool` if given) and returns y.
  Tensor run(const Linear& linear, const Tensor& x, ThreadPool* pool = nullptr) {
    Tensor y = Tensor::empty({x.size(0), linear.out_features()}, DType::kF32);
    y.fill_bytes(0xff);
    if (pool != nullptr) {
      linear.forward(x, y, *pool);
    } else {
      linear.forward(x, y);
    }
    return y;
  }
  Tensor reference(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias) {
    Tensor y = Tensor::empty({x.size(0), w.size(0)}, DType::kF32);
    linear_reference(x, w, bias ? &*bias : nullptr, y);
    return y;
  }
  // Σ|x|·|w| + |bias| per output: the size of the terms each output sums.
  Tensor magnitude(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias) {
    std::optional<Tensor> abs_bias;
    if (bias) abs_bias = ops_test::absolute(*bias);
    return reference(ops_test::absolute(x), ops_test::absolute(w), abs_bias);
  }
  // x rounded to bf16 and back: the values a bf16-weight Linear actually multiplies.
  static Tensor bf16_rounded(const Tensor& x) { return x.to(DType::kBF16).to(DType::kF32); }
};

TEST_F(LinearTest, F32MatchesReferenceForDecodeAndPrefillTokenCounts) {
  for (int64_t tokens : {1, 3, 17, 67}) {
    for (bool with_bias : {false, true}) {
      SCOPED_TRACE(testing::Message() << "tokens " << tokens << " bias " << with_bias);
      const int64_t in = 2 * uniform_int(10, 150) + 1, out = 2 * uniform_int(10, 150) + 1;
      const Tensor w = random({out, in});
      std::optional<Tensor> bias;
      if (with_bias) bias = random({out});
      const Linear linear(w, bias);
      const Tensor x = random({tokens, in});
      const Tensor y = run(linear, x);
      EXPECT_TRUE(ops_test::all_finite(y));
      EXPECT_LE(ops_test::relative_error(y, reference(x, w, bias)), 1e-5);
    }
  }
}

TEST_F(LinearTest, StridedInputOutputAndWeightRows) {
  const int64_t tokens = 17, in = 131, out = 77;
  // Weight rows strided: the first `in` columns of a wider matrix (a TP column slice).
  const Tensor w_wide = random({out, in + 9});
  const Tensor w = w_wide.slice(1, 0, in);
  const std::optional<Tensor> bias = random({out});
  const Linear linear(w, bias);
  for (int64_t t : {int64_t{1}, tokens}) {
    Tensor x = ops_test::strided_f32({t, in}, 5, 12);
    x.copy_from(random({t, in}));
    Tensor y = ops_test::strided_f32({t, out}, 3, 7);
    linear.forward(x, y);
    EXPECT_TRUE(ops_test::all_finite(y));
    EXPECT_LE(ops_test::relative_error(y, reference(x, w, bias)), 1e-5);
  }
}

TEST_F(LinearTest, Bf16WeightsMatchReferenceOnRoundedValues) {
  // 8 vs 9 tokens straddles the GEMV and the GEMM paths; every case also runs with rows split
  // over a pool.
  ThreadPool pool(3);
  for (int64_t tokens : {1, 3, 8, 9, 17, 33}) {
    for (bool with_bias : {false, true}) {
      SCOPED_TRACE(testing::Message() << "tokens " << tokens << " bias " << with_bias);
      const int64_t in = 2 * uniform_int(10, 200) + 1, out = 2 * uniform_int(10, 150) + 1;
      const Tensor w = random({out, in}, DType::kBF16);
      std::optional<Tensor> bias;
      if (with_bias) bias = random({out});
      const Linear linear(w, bias);
      const Tensor x = random({tokens, in});
      const Tensor y = run(linear, x);
      EXPECT_TRUE(ops_test::all_finite(y));
      EXPECT_LE(ops_test::relative_error(y, reference(bf16_rounded(x), w, bias)), 1e-5);
      EXPECT_LE(ops_test::relative_error(y, reference(x, w, bias)), 1e-2);
      const Tensor y_pool = run(linear, x, &pool);
      EXPECT_TRUE(ops_test::all_finite(y_pool));
      EXPECT_LE(ops_test::relative_error(y_pool, reference(bf16_rounded(x), w, bias)), 1e-5);
    }
  }
}

TEST_F(LinearTest, Bf16WeightsWithLongRowsAndSeveralChunksAndRowRanges) {
  // Enough rows for several pool tasks and, on one thread, two 512-row weight tiles with a
  // partial last one; a long odd input dim.
  const int64_t tokens = 37, in = 4099, out = 2 * uniform_int(260, 300) + 1;
  const Tensor w = random({out, in}, DType::kBF16);
  const std::optional<Tensor> bias = random({out});
  const Linear linear(w, bias);
  const Tensor x = random({tokens, in});
  const Tensor expected = reference(bf16_rounded(x), w, bias);
  ThreadPool pool(2);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    const Tensor y = run(linear, x, p);
    EXPECT_TRUE(ops_test::all_finite(y));
    EXPECT_LE(ops_test::relative_error(y, expected), 1e-5);
  }
}

TEST_F(LinearTest, LongPrefillCrossesEveryTokenChunk) {
  // Two full token chunks of 512 (x rounded per chunk) and a partial third; rows over several
  // weight tiles of 128.
  const int64_t tokens = 1100, in = 2 * uniform_int(20, 60) + 1, out = 2 * uniform_int(70, 150) + 1;
  const Tensor x = random({tokens, in});
  const std::optional<Tensor> bias = random({out});
  ThreadPool pool(2);
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor w = random({out, in}, dtype);
    const Linear linear(w, bias);
    const Tensor expected = reference(dtype == DType::kBF16 ? bf16_rounded(x) : x, w, bias);
    EXPECT_LE(ops_test::relative_error(run(linear, x), expected), 1e-5);
    EXPECT_LE(ops_test::relative_error(run(linear, x, &pool), expected), 1e-5);
  }
}

TEST_F(LinearTest, ZeroTokensIsANoOp) {
  const Linear linear(random({5, 7}));
  Tensor y = Tensor::empty({0, 5}, DType::kF32);
  EXPECT_NO_THROW(linear.forward(Tensor::empty({0, 7}, DType::kF32), y));
  EXPECT_EQ(linear.forward(Tensor::empty({0, 7}, DType::kF32)).shape(), (Shape{0, 5}));
}

TEST_F(LinearTest, KeepsTheGivenWeightAsItsOnlyCopy) {
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    const Tensor w = random({301, 257}, dtype);
    const int64_t live_before = allocation_stats().live_bytes;
    const Linear linear(w);
    // Construction allocates no tensor storage: no copy, no reordered copy.
    EXPECT_EQ(allocation_stats().live_bytes, live_before);
    EXPECT_EQ(linear.weight().raw(), w.raw());
    const Tensor x = random({20, 257});
    const Tensor y = linear.forward(x);
    EXPECT_EQ(linear.weight().raw(), w.raw());
    EXPECT_EQ(linear.in_features(), 257);
    EXPECT_EQ(linear.out_features(), 301);
    // Writing into the weight's memory changes the next result: it is read in place.
    Tensor w_view = linear.weight();
    w_view.fill(0.0);
    const Tensor zero = linear.forward(x);
    for (double v : ops_test::to_doubles(zero)) ASSERT_EQ(v, 0.0);
    EXPECT_GT(ops_test::relative_error(y, zero), 0.5);
  }
}

TEST_F(LinearTest, ConcurrentForwardFromSeveralThreads) {
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    const int64_t in = 97, out = 53;
    const Tensor w = random({out, in}, dtype);
    const std::optional<Tensor> bias = random({out});
    const Linear linear(w, bias);
    // Each thread uses its own token count, so primitives are created while others run.
    const std::vector<int64_t> token_counts = {1, 2, 5, 9, 33, 40};
    std::vector<Tensor> xs, ys, refs;
    for (int64_t t : token_counts) {
      xs.push_back(random({t, in}));
      ys.push_back(Tensor::empty({t, out}, DType::kF32));
      refs.push_back(
          reference(dtype == DType::kBF16 ? bf16_rounded(xs.back()) : xs.back(), w, bias));
    }
    // Half the threads bring their own pool, as ranks do.
    std::vector<std::thread> threads;
    for (size_t i = 0; i < token_counts.size(); ++i) {
      threads.emplace_back([&, i] {
        ThreadPool pool(2);
        for (int rep = 0; rep < 20; ++rep) {
          if (i % 2) {
            linear.forward(xs[i], ys[i], pool);
          } else {
            linear.forward(xs[i], ys[i]);
          }
        }
      });
    }
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < token_counts.size(); ++i) {
      EXPECT_LE(ops_test::relative_error(ys[i], refs[i]), 1e-5) << "tokens " << token_counts[i];
    }
  }
}

// The bf16 GEMM choice: AMX always takes oneDNN's bf16 matmul, a CPU without bf16 dot
// products never does, and the probe between (vdpbf16ps against the FMA) reads a rate ratio a
// real core can have — a loop folded away or timed wrong reads 0, inf or NaN.
TEST_F(LinearTest, Bf16GemmChoiceFollowsTheCpu) {
  const CpuFeatures& f = cpu_features();
  // The decode GEMV takes vdpbf16ps exactly where bf16 dot products are fast, never for f32.
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (isa > active_isa()) continue;
    for (int64_t tokens = 1; tokens <= detail::kGemvMaxTokens; ++tokens) {
      EXPECT_EQ(detail::gemv_kernel(isa, DType::kBF16, tokens) == detail::GemvKernel::kAvx512Bf16,
                isa >= Isa::kAvx512 && detail::bf16_dot_fast());
      EXPECT_NE(detail::gemv_kernel(isa, DType::kF32, tokens), detail::GemvKernel::kAvx512Bf16);
    }
  }
  // The tile unit takes bf16 weights at Isa::kAmx from kAmxGemvMinTokens tokens, never f32.
  if (active_isa() == Isa::kAmx) {
    for (int64_t tokens = 1; tokens <= detail::kGemvMaxTokens; ++tokens) {
      EXPECT_EQ(detail::gemv_kernel(Isa::kAmx, DType::kBF16, tokens) == detail::GemvKernel::kAmx,
                tokens >= detail::kAmxGemvMinTokens);
      EXPECT_EQ(detail::gemv_kernel(Isa::kAmx, DType::kF32, tokens), detail::GemvKernel::kAvx512);
    }
  }
  // The prefill GEMM: ctxpar's own on AVX2, oneDNN's bf16 matmul exactly where it is native.
  EXPECT_EQ(detail::bf16_gemm(Isa::kAvx2), detail::Bf16Gemm::kOwnAvx2);
  EXPECT_EQ(detail::bf16_gemm(Isa::kScalar), detail::Bf16Gemm::kOneDnnSgemmOnF32Tiles);
  if (active_isa() >= Isa::kAvx512) {
    EXPECT_EQ(detail::bf16_gemm(Isa::kAvx512) == detail::Bf16Gemm::kOneDnnBf16,
              detail::onednn_native_bf16());
  }
  if (!f.avx512_bf16) {
    EXPECT_FALSE(detail::onednn_native_bf16());
    EXPECT_FALSE(detail::bf16_dot_fast());
    return;
  }
  const double ratio = detail::bf16_dot_to_fma_mac_ratio();
  EXPECT_GT(ratio, 0.1);
  EXPECT_LT(ratio, 8.0);
  if (f.amx_bf16 && active_isa() >= Isa::kAvx512) {
    EXPECT_TRUE(detail::onednn_native_bf16());
  }
}

TEST_F(LinearTest, MalformedShapesThrow) {
  EXPECT_THROW(Linear(random({4})), Error);
  EXPECT_THROW(Linear(random({4, 6}, DType::kF16)), Error);
  EXPECT_THROW(Linear(Tensor::empty({4, 6}, DType::kI8)), Error);
  EXPECT_THROW(Linear(random({0, 6})), Error);
  EXPECT_THROW(Linear(random({4, 6}), random({5})), Error);
  EXPECT_THROW(Linear(random({4, 6}), random({4}, DType::kBF16)), Error);
  // A column-strided weight (a transposed view) is not [out, in] row-major.
  Tensor storage = random({6, 4});
  EXPECT_THROW(Linear(Tensor::wrap(storage.raw(), {4, 6}, DType::kF32, {1, 4})), Error);

  const Linear linear(random({4, 6}));
  Tensor y = Tensor::empty({3, 4}, DType::kF32);
  EXPECT_THROW(linear.forward(random({3, 5}), y), Error);
  EXPECT_THROW(linear.forward(random({3, 6}, DType::kBF16), y), Error);
  EXPECT_THROW(linear.forward(random({2, 6}), y), Error);
  EXPECT_THROW(linear.forward(random({3, 6, 1}), y), Error);
  Tensor y_wrong = Tensor::empty({3, 5}, DType::kF32);
  EXPECT_THROW(linear.forward(random({3, 6}), y_wrong), Error);
  Tensor y_bf16 = Tensor::empty({3, 4}, DType::kBF16);
  EXPECT_THROW(linear.forward(random({3, 6}), y_bf16), Error);
  Tensor x_storage = random({6, 3});
  const Tensor x_cols = Tensor::wrap(x_storage.raw(), {3, 6}, DType::kF32, {1, 3});
  EXPECT_THROW(linear.forward(x_cols, y), Error);
}

// Every ISA variant of the decode GEMV the CPU can run, on random shapes: input dims that are
// a multiple of every pair step, that leave a tail, and below one step; every token count it
// takes; a row range that cuts register blocks; strided weight rows; with and without bias.
TEST_F(LinearTest, GemvVariantsMatchReferenceOnEveryIsa) {
  std::vector<detail::GemvKernel> kernels;
  for (detail::GemvKernel kernel :
       {detail::GemvKernel::kScalar, detail::GemvKernel::kAvx2, detail::GemvKernel::kAvx512,
        detail::GemvKernel::kAvx512Bf16, detail::GemvKernel::kAmx}) {
    if (detail::gemv_kernel_available(kernel)) kernels.push_back(kernel);
  }
  std::cout << "gemv kernels run:";
  for (detail::GemvKernel kernel : kernels) std::cout << " " << detail::gemv_kernel_name(kernel);
  std::cout << "\n";
  for (detail::GemvKernel kernel : kernels) {
    for (DType dtype : {DType::kF32, DType::kBF16}) {
      for (int64_t in :
           {int64_t{32} * uniform_int(1, 8), 2 * uniform_int(20, 100) + 1, uniform_int(1, 15)}) {
        for (int64_t tokens = 1; tokens <= detail::kGemvMaxTokens; ++tokens) {
          const bool with_bias = tokens % 2 == 1;
          SCOPED_TRACE(testing::Message()
                       << detail::gemv_kernel_name(kernel) << " " << dtype_name(dtype) << " in "
                       << in << " tokens " << tokens << " bias " << with_bias);
          const int64_t out = uniform_int(1, 40), pad = uniform_int(0, 9);
          const Tensor w = random({out, in + pad}, dtype).slice(1, 0, in);
          const Tensor x = random({tokens, in});
          std::optional<Tensor> bias;
          if (with_bias) bias = random({out});
          // Rows [r0, r1) only; the others must stay as poisoned.
          const int64_t r0 = uniform_int(0, out / 2), r1 = uniform_int(r0, out);
          std::vector<float> xp(static_cast<size_t>(tokens * in));
          detail::gemv_prepare_x(kernel, dtype, x.data<float>(), in, tokens, in, xp.data());
          Tensor y = Tensor::empty({tokens, out}, DType::kF32);
          y.fill_bytes(0xff);
          detail::gemv(kernel, dtype, xp.data(), tokens, in, w.raw(), w.stride(0), r0, r1,
                       bias ? bias->data<float>() : nullptr, y.data<float>(), out);
          const Tensor xr = dtype == DType::kBF16 ? bf16_rounded(x) : x;
          const Tensor want = reference(xr, w, bias);
          const Tensor scale = magnitude(xr, w, bias);
          // A row range of one output and one token is a single dot product, which can cancel
          // to near zero: measure the error against the magnitude of its terms.
          const auto expect_rows_match = [&](const Tensor& got_all, std::string_view what) {
            if (r1 == r0) return;
            const Tensor got = got_all.slice(1, r0, r1).contiguous();
            EXPECT_TRUE(ops_test::all_finite(got)) << what;
            EXPECT_LE(ops_test::error_relative_to(got, want.slice(1, r0, r1).contiguous(),
                                                  scale.slice(1, r0, r1).contiguous()),
                      1e-6)
                << what;
          };
          expect_rows_match(y, "this CPU's access pattern");
          // Intel's and AMD's access patterns (linear_gemv.h, GemvArgs) on every CPU: the
          // dot-product kernel's give the same bits, the shift/mask kernels' the same sums to
          // rounding.
          const auto bf16_variant = [&]() -> void (*)(const detail::GemvArgs&) {
            if (dtype != DType::kBF16) return nullptr;
            switch (kernel) {
              case detail::GemvKernel::kAvx2:
                return &detail::gemv_bf16_avx2;
              case detail::GemvKernel::kAvx512:
                return &detail::gemv_bf16_avx512;
              case detail::GemvKernel::kAvx512Bf16:
                return &detail::gemv_bf16_avx512bf16;
              default:
                return nullptr;
            }
          }();
          for (bool intel_pattern : {false, true}) {
            if (bf16_variant == nullptr) break;
            Tensor again = Tensor::empty({tokens, out}, DType::kF32);
            again.fill_bytes(0xff);
            detail::GemvArgs a{xp.data(),
                               tokens,
                               in,
                               static_cast<const uint16_t*>(w.raw()) + r0 * w.stride(0),
                               w.stride(0),
                               r1 - r0,
                               bias ? bias->data<float>() + r0 : nullptr,
                               again.data<float>() + r0,
                               out,
                               intel_pattern};
            bf16_variant(a);
            const std::string what = intel_pattern ? "Intel's pattern" : "AMD's pattern";
            expect_rows_match(again, what);
            if (kernel == detail::GemvKernel::kAvx512Bf16) {
              EXPECT_EQ(std::memcmp(again.raw(), y.raw(), y.nbytes()), 0) << what;
            }
          }
          const Tensor before = y.slice(1, 0, r0).contiguous();
          const Tensor after = y.slice(1, r1, out).contiguous();
          for (const Tensor* untouched : {&before, &after}) {
            for (int64_t i = 0; i < untouched->numel(); ++i) {
              EXPECT_TRUE(std::isnan(untouched->data<float>()[i])) << "a row outside the range";
            }
          }
        }
      }
    }
  }
}

// Every variant of the bf16 prefill GEMM the CPU can run, against the reference on x rounded to
// bf16: token counts that leave a partial 6-token tile and span several 96-token blocks, k
// that is a multiple of the depth block, leaves a tail of a few values or of less than one
// vector, output rows that end inside a panel and span several 256-row blocks; strided weight
// and output rows; with and without bias. Columns past n must stay as poisoned.
TEST_F(LinearTest, GemmVariantsMatchReferenceOnEveryIsa) {
  std::vector<Isa> isas = {Isa::kScalar};
  if (cpu_features().avx2_fma) isas.push_back(Isa::kAvx2);
  std::cout << "bf16 gemm variants run:";
  for (Isa isa : isas) std::cout << " " << isa_name(isa);
  std::cout << "\n";
  for (Isa isa : isas) {
    for (int64_t k : {detail::kGemmDepth * uniform_int(1, 2),
                      detail::kGemmDepth + uniform_int(1, 7), 2 * uniform_int(20, 150) + 1}) {
      for (int64_t tokens : {int64_t{9}, 6 * uniform_int(2, 5), uniform_int(97, 200)}) {
        const bool with_bias = tokens % 2 == 1;
        const int64_t n = tokens < 100 ? uniform_int(1, 70) : uniform_int(257, 400);
        SCOPED_TRACE(testing::Message() << isa_name(isa) << " k " << k << " tokens " << tokens
                                        << " n " << n << " bias " << with_bias);
        const int64_t w_pad = uniform_int(0, 9), y_pad = uniform_int(1, 9);
        const Tensor w = random({n, k + w_pad}, DType::kBF16).slice(1, 0, k);
        const Tensor x = random({tokens, k});
        std::optional<Tensor> bias;
        if (with_bias) bias = random({n});
        std::vector<float> xp(static_cast<size_t>(detail::gemm_packed_x_floats(tokens, k)));
        detail::gemm_pack_x(x.data<float>(), k, tokens, k, /*round_to_bf16=*/true, xp.data());
        Tensor y = Tensor::empty({tokens, n + y_pad}, DType::kF32);
        y.fill_bytes(0xff);
        detail::GemmArgs a;
        a.xp = xp.data();
        a.tokens = tokens;
        a.k = k;
        a.w.bf16 = static_cast<const uint16_t*>(w.raw());
        a.w.ldw = w.stride(0);
        a.n = n;
        a.bias = bias ? bias->data<float>() : nullptr;
        a.y = y.data<float>();
        a.ldy = n + y_pad;
        detail::gemm(isa, a);
        const Tensor got = y.slice(1, 0, n).contiguous();
        EXPECT_TRUE(ops_test::all_finite(got));
        EXPECT_LE(ops_test::relative_error(got, reference(bf16_rounded(x), w, bias)), 1e-5);
        const Tensor pad = y.slice(1, n, n + y_pad).contiguous();
        for (int64_t i = 0; i < pad.numel(); ++i) {
          ASSERT_TRUE(std::isnan(pad.data<float>()[i])) << "a column past n was written";
        }
        // The same weights through the f32-row source a dequantizer uses: the same values
        // packed the same way, so the same sums bit for bit.
        const Tensor w_f32 = w.to(DType::kF32);
        a.w = detail::GemmWeights{};
        a.w.ctx = &w_f32;
        a.w.rows_f32 = [](const void* ctx, int64_t r0, int64_t nr, int64_t k0, int64_t kc,
                          float* out, int64_t ldo) {
          const Tensor& src = *static_cast<const Tensor*>(ctx);
          for (int64_t r = 0; r < nr; ++r) {
            for (int64_t i = 0; i < kc; ++i) {
              out[r * ldo + i] = src.data<float>()[(r0 + r) * src.size(1) + k0 + i];
            }
          }
        };
        Tensor y_rows = Tensor::empty({tokens, n}, DType::kF32);
        y_rows.fill_bytes(0xff);
        a.y = y_rows.data<float>();
        a.ldy = n;
        detail::gemm(isa, a);
        EXPECT_EQ(std::memcmp(y_rows.raw(), got.raw(), got.nbytes()), 0)
            << "the f32-row source gave other sums than the bf16 rows";
      }
    }
  }
  EXPECT_THROW(detail::gemm(Isa::kAvx512, detail::GemmArgs{}), Error);
}

}  // namespace
}  // namespace ctxpar::kernels
