// e4m3 conversion (all 256 codes, rounding against brute force), the FP8 GEMV and
// dequantization loops of every ISA this CPU has against the double reference, Fp8Linear's
// decode and prefill paths with and without a pool, bf16 activations, block quantization, and
// the constructor's checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/error.h"
#include "ctxpar/core/fp8.h"
#include "ctxpar/kernels/linear_fp8.h"
#include "ctxpar/kernels/linear_fp8_kernel.h"
#include "kernels/ops/ops_test_util.h"
#include "numerics.h"

namespace ctxpar::kernels {
namespace {

using ops_test::SeededTest;
using test_support::relative_error;

std::vector<Isa> available_isas() {
  std::vector<Isa> isas{Isa::kScalar};
  if (cpu_features().avx2_fma) isas.push_back(Isa::kAvx2);
  if (cpu_features().avx512) isas.push_back(Isa::kAvx512);
  return isas;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A tensor of `shape` filled with NaN, so an element the kernel never writes stays visible.
Tensor poisoned(const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
  return t;
}

class Fp8Test : public SeededTest {
 protected:
  // lin's forward of x on the calling thread (pool null) or over `pool`, into a poisoned y,
  // within 2e-6 of `want` (the double reference).
  static void expect_forward(const Fp8Linear& lin, const Tensor& x, const Tensor& want,
                             ThreadPool* pool) {
    Tensor y = poisoned({x.size(0), lin.out_features()});
    if (pool != nullptr) {
      lin.forward(x, y, *pool);
    } else {
      lin.forward(x, y);
    }
    if (x.size(0) == 0) return;
    EXPECT_LE(relative_error(y, want), 2e-6) << (pool ? pool->num_threads() : 1) << " threads";
  }

  // A random FP8 weight: bytes over every finite code (so subnormals and the largest values
  // occur), scales (per block or per row) spread over a few octaves.
  // pow2: powers of two only (ue8m0), which the bf16 prefill folds into the weights.
  Fp8Weight random_weight(int64_t out, int64_t in, Fp8Scaling scaling = Fp8Scaling::kBlock128,
                          bool pow2 = false) {
    Fp8Weight w{Tensor::empty({out, in}, DType::kF8E4M3),
                Tensor::empty(fp8_scale_shape(out, in, scaling), DType::kF32), scaling};
    auto* q = static_cast<uint8_t*>(w.weight.raw());
    for (int64_t i = 0; i < w.weight.numel(); ++i) {
      uint8_t b;
      do {
        b = static_cast<uint8_t>(uniform_int(0, 255));
      } while ((b & 0x7F) == 0x7F);  // not NaN
      q[i] = b;
    }
    float* s = w.scale_inv.data<float>();
    for (int64_t i = 0; i < w.scale_inv.numel(); ++i) {
      s[i] = pow2 ? std::exp2(static_cast<float>(uniform_int(-12, -4)))
                  : static_cast<float>(uniform(0.5, 4.0) / 448.0 * std::exp2(uniform_int(-3, 3)));
    }
    return w;
  }
};

// One GEMV call's draw: a random weight and x, the double reference with `act` activations,
// and a row range inside one 128-row block, as Fp8Linear hands them to the kernels.
struct GemvCase {
  int64_t out, in, block, r0, nr;
  int tokens;
  Fp8Weight w;
  Tensor x, want;
  const float* scale_row() const { return w.scale_inv.data<float>() + block * w.scale_inv.size(1); }
};

class Fp8GemvTest : public Fp8Test {
 protected:
  GemvCase draw(const std::vector<int64_t>& outs, const std::vector<int64_t>& ins, int max_tokens,
                DType act) {
    GemvCase c;
    c.out = outs[uniform_int(0, static_cast<int64_t>(outs.size()) - 1)];
    c.in = ins[uniform_int(0, static_cast<int64_t>(ins.size()) - 1)];
    c.tokens = static_cast<int>(uniform_int(1, max_tokens));
    c.w = random_weight(c.out, c.in);
    c.x = random({c.tokens, c.in});
    c.want = Tensor::empty({c.tokens, c.out}, DType::kF32);
    fp8_linear_reference(c.x, c.w, nullptr, act, c.want);
    c.block = uniform_int(0, (c.out - 1) / 128);
    const int64_t lo = c.block * 128, hi = std::min(c.out, lo + 128);
    c.r0 = uniform_int(lo, hi - 1);
    c.nr = uniform_int(1, hi - c.r0);
    return c;
  }

  // y (poisoned before the call) holds the reference in the case's rows and NaN elsewhere.
  static void expect_rows(const GemvCase& c, const Tensor& y) {
    for (int t = 0; t < c.tokens; ++t) {
      for (int64_t o = 0; o < c.out; ++o) {
        const float got = y.data<float>()[t * c.out + o];
        if (o < c.r0 || o >= c.r0 + c.nr) {
          EXPECT_TRUE(std::isnan(got)) << "row " << o << " outside the range was written";
          continue;
        }
        const float ref = c.want.data<float>()[t * c.out + o];
        EXPECT_NEAR(got, ref, 1e-5 * (1 + std::fabs(ref)) * std::sqrt(c.in)) << t << "," << o;
      }
    }
  }
};

TEST_F(Fp8Test, E4m3CodesDecodeAndRoundTripExactly) {
  int finite = 0;
  for (int b = 0; b < 256; ++b) {
    const float v = fp8_e4m3::to_f32(static_cast<uint8_t>(b));
    if ((b & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(v) && std::isnan(detail::e4m3_table()[b])) << b;
      continue;
    }
    EXPECT_EQ(detail::e4m3_table()[b], v) << b;
    ++finite;
    EXPECT_LE(std::fabs(v), 448.0f);
    // Every finite code encodes back to itself (0x80, -0, included).
    EXPECT_EQ(fp8_e4m3::from_f32(v), b) << "code " << b << " value " << v;
  }
  EXPECT_EQ(finite, 254);
  EXPECT_EQ(fp8_e4m3::to_f32(0x7E), 448.0f);
  EXPECT_EQ(fp8_e4m3::to_f32(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(fp8_e4m3::to_f32(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(fp8_e4m3::to_f32(0xB8), -1.0f);
}

TEST_F(Fp8Test, E4m3RoundsToNearestEvenAndSaturates) {
  std::vector<float> values;
  for (int b = 0; b < 128; ++b) {
    if (b != 0x7F) values.push_back(fp8_e4m3::to_f32(static_cast<uint8_t>(b)));
  }
  for (int rep = 0; rep < 20000; ++rep) {
    const float x = static_cast<float>(uniform(-1, 1) * std::exp2(uniform_int(-12, 9)));
    const uint8_t got = fp8_e4m3::from_f32(x);
    const float a = std::fabs(x);
    if (a >= 448.0f) {
      EXPECT_EQ(got & 0x7F, 0x7E) << x;
      continue;
    }
    // Brute force: the nearest magnitude, ties to the even code.
    size_t best = 0;
    for (size_t i = 1; i < values.size(); ++i) {
      const float d = std::fabs(values[i] - a), db = std::fabs(values[best] - a);
      if (d < db || (d == db && (i % 2 == 0))) best = i;
    }
    EXPECT_EQ(got & 0x7F, static_cast<int>(best)) << "x " << x;
    if (x < 0 && best != 0) {
      EXPECT_EQ(got & 0x80, 0x80) << x;
    }
  }
  EXPECT_EQ(fp8_e4m3::from_f32(1e6f), 0x7E);
  EXPECT_EQ(fp8_e4m3::from_f32(-std::numeric_limits<float>::infinity()), 0xFE);
  EXPECT_EQ(fp8_e4m3::from_f32(std::numeric_limits<float>::quiet_NaN()) & 0x7F, 0x7F);
}

TEST_F(Fp8GemvTest, GemvOfEveryIsaMatchesTheReference) {
  for (Isa isa : available_isas()) {
    const detail::Fp8Kernels& k = detail::fp8_kernels(isa);
    for (int rep = 0; rep < 24; ++rep) {
      const GemvCase c =
          draw({1, 3, 127, 128, 131, 300}, {1, 7, 16, 63, 64, 100, 128, 200, 257, 320},
               detail::kFp8GemvMaxTokens, DType::kF32);
      SCOPED_TRACE(testing::Message() << isa_name(isa) << " out " << c.out << " in " << c.in
                                      << " tokens " << c.tokens);
      std::vector<float> xs(static_cast<size_t>(c.tokens * c.in));
      k.scale_x(c.x.data<float>(), c.in, c.tokens, c.in, c.scale_row(), xs.data());
      Tensor y = poisoned({c.tokens, c.out});
      k.gemv(xs.data(), c.in, c.tokens, static_cast<const uint8_t*>(c.w.weight.raw()), c.in, c.in,
             c.r0, c.nr, y.data<float>(), c.out);
      expect_rows(c, y);
    }
  }
}

// The AVX-512 BF16 GEMV (bf16 activations) against the double reference on bf16-rounded x:
// row ranges inside a 128-row block, k on and off its 64-value chunks and 128-value blocks,
// 1 to 16 tokens (passes of four).
TEST_F(Fp8GemvTest, Bf16GemvMatchesTheReference) {
  if (!detail::fp8_gemv_bf16_usable()) {
    GTEST_SKIP() << "this CPU lacks AVX-512 BF16 with VBMI (or CTXPAR_ISA is below avx512)";
  }
  for (int rep = 0; rep < 40; ++rep) {
    const GemvCase c =
        draw({1, 3, 127, 128, 131, 300}, {1, 7, 63, 64, 65, 100, 128, 129, 200, 257, 320, 700}, 16,
             DType::kBF16);
    SCOPED_TRACE(testing::Message() << "out " << c.out << " in " << c.in << " tokens " << c.tokens);
    std::vector<uint16_t> xp(static_cast<size_t>(c.tokens * detail::fp8_bf16_x_stride(c.in)),
                             0xFFFF);
    detail::fp8_prepare_x_bf16(c.x.data<float>(), c.in, c.tokens, c.in, xp.data());
    Tensor y = poisoned({c.tokens, c.out});
    detail::fp8_gemv_bf16({xp.data(), c.tokens, c.in, static_cast<const uint8_t*>(c.w.weight.raw()),
                           c.in, c.scale_row(), c.r0, c.nr, y.data<float>(), c.out});
    expect_rows(c, y);
  }
}

// Every e4m3 code through the bf16 GEMV's byte tables: x one-hot, so each output is one code's
// value times its block scale, exactly.
TEST_F(Fp8Test, Bf16GemvWidensEveryCodeExactly) {
  if (!detail::fp8_gemv_bf16_usable()) {
    GTEST_SKIP() << "this CPU lacks AVX-512 BF16 with VBMI (or CTXPAR_ISA is below avx512)";
  }
  // 160 columns: a 32-value tail after two chunks. Token t reads column hot[t] (distinct, at
  // random), whose 128 rows hold the codes 0-127 (even t) or 128-255 (odd t), NaNs as 0.
  const int64_t out = 128, in = 160;
  Fp8Weight w = random_weight(out, in);
  auto* q = static_cast<uint8_t*>(w.weight.raw());
  const int tokens = 16;
  std::vector<int64_t> hot(static_cast<size_t>(in));
  std::iota(hot.begin(), hot.end(), 0);
  std::shuffle(hot.begin(), hot.end(), rng_);
  Tensor x = Tensor::empty({tokens, in}, DType::kF32);
  for (int t = 0; t < tokens; ++t) {
    for (int64_t o = 0; o < out; ++o) {
      const int code = (t % 2) * 128 + static_cast<int>(o);
      q[o * in + hot[t]] = (code & 0x7F) == 0x7F ? 0 : static_cast<uint8_t>(code);
    }
    for (int64_t i = 0; i < in; ++i) x.data<float>()[t * in + i] = i == hot[t] ? 1.0f : 0.0f;
  }
  std::vector<uint16_t> xp(static_cast<size_t>(tokens * detail::fp8_bf16_x_stride(in)));
  detail::fp8_prepare_x_bf16(x.data<float>(), in, tokens, in, xp.data());
  Tensor y = poisoned({tokens, out});
  const float* s = w.scale_inv.data<float>();
  detail::fp8_gemv_bf16({xp.data(), tokens, in, q, in, s, 0, out, y.data<float>(), out});
  for (int t = 0; t < tokens; ++t) {
    for (int64_t o = 0; o < out; ++o) {
      const uint8_t code = q[o * in + hot[t]];
      ASSERT_EQ(y.data<float>()[t * out + o], fp8_e4m3::to_f32(code) * s[hot[t] / 128])
          << "code " << int{code} << " at row " << o << ", column " << hot[t];
    }
  }
}

// forward's kernel by token count and activation dtype, as this CPU allows.
TEST_F(Fp8Test, KernelForFollowsTokensAndActivations) {
  const Fp8Weight w = random_weight(uniform_int(1, 300), uniform_int(1, 300));
  const Fp8Linear f32(w, std::nullopt, DType::kF32);
  const Fp8Linear b16(w, std::nullopt, DType::kBF16);
  const bool amx = active_isa() == Isa::kAmx;
  const std::string_view bf16_gemv = detail::fp8_gemv_bf16_usable() ? "gemv-bf16" : "gemv";
  for (int64_t tokens : {1, 2}) {
    EXPECT_EQ(f32.kernel_for(tokens), "gemv") << tokens;
    EXPECT_EQ(b16.kernel_for(tokens), bf16_gemv) << tokens;
  }
  EXPECT_EQ(f32.kernel_for(16), "gemv");
  EXPECT_EQ(b16.kernel_for(16), amx ? "amx" : bf16_gemv);
  EXPECT_EQ(f32.kernel_for(17), "prefill");
  EXPECT_EQ(b16.kernel_for(17), amx ? "amx" : "prefill");
  EXPECT_EQ(b16.kernel_for(uniform_int(100, 1000)), "prefill");
}

TEST_F(Fp8Test, DequantizationOfEveryIsaIsExact) {
  for (Isa isa : available_isas()) {
    const int64_t out = uniform_int(1, 300), in = uniform_int(1, 300);
    SCOPED_TRACE(testing::Message() << isa_name(isa) << " " << out << "x" << in);
    const Fp8Weight w = random_weight(out, in);
    const int64_t r0 = uniform_int(0, out - 1), nr = uniform_int(1, out - r0);
    Tensor tile = poisoned({nr, in});
    detail::fp8_kernels(isa).dequantize(static_cast<const uint8_t*>(w.weight.raw()), in,
                                        w.scale_inv.data<float>(), w.scale_inv.size(1), in, r0, nr,
                                        tile.data<float>(), in);
    const auto* q = static_cast<const uint8_t*>(w.weight.raw());
    for (int64_t r = 0; r < nr; ++r) {
      for (int64_t i = 0; i < in; ++i) {
        const float want =
            fp8_e4m3::to_f32(q[(r0 + r) * in + i]) *
            w.scale_inv.data<float>()[((r0 + r) / 128) * w.scale_inv.size(1) + i / 128];
        ASSERT_EQ(tile.data<float>()[r * in + i], want) << r << "," << i;
      }
    }
  }
}

TEST_F(Fp8Test, LinearMatchesTheReferenceOnBothPathsWithAndWithoutAPool) {
  ThreadPool pool(2);
  for (int rep = 0; rep < 16; ++rep) {
    const int64_t out = uniform_int(1, 400), in = uniform_int(1, 400);
    const int64_t tokens = uniform_int(0, 11);  // 0..4: GEMV, more: dequantized tiles + GEMM
    const DType act = rep % 2 ? DType::kBF16 : DType::kF32;
    const bool with_bias = rep % 3 == 0;
    const Fp8Scaling scaling = rep % 4 < 2 ? Fp8Scaling::kBlock128 : Fp8Scaling::kPerRow;
    SCOPED_TRACE(testing::Message()
                 << out << "x" << in << " tokens " << tokens << " " << dtype_name(act)
                 << (with_bias ? " bias " : " ") << fp8_scaling_name(scaling));
    const Fp8Weight w = random_weight(out, in, scaling);
    const Tensor bias = random({out});
    const Fp8Linear lin(w, with_bias ? std::optional<Tensor>(bias) : std::nullopt, act);
    // x as a column slice of a wider tensor: strided rows.
    const Tensor wide = random({tokens, in + 5});
    const Tensor x = wide.slice(1, 2, 2 + in);
    Tensor want = Tensor::empty({tokens, out}, DType::kF32);
    fp8_linear_reference(x, w, with_bias ? &bias : nullptr, act, want,
                         lin.rounds_weights_to_bf16(tokens));
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool})
      expect_forward(lin, x, want, p);
  }
}

// Every token count up to past the tile kernel's two token tiles, bf16 activations (the tile
// kernel at Isa::kAmx from 2 tokens, the GEMV's passes, the prefill path): rows that end in a
// partial 32-row group, k with a partial last 128-block and a k % 32 tail (or k < 32), block
// and per-row scales, with and without a pool.
TEST_F(Fp8Test, EveryTokenCountPathMatchesTheReference) {
  ThreadPool pool(3);
  for (const int64_t tokens : {2, 3, 5, 8, 15, 16, 17, 24, 31, 32, 33, 40}) {
    const int64_t out = uniform_int(1, 330);
    const int64_t in = uniform_int(0, 3) == 0 ? uniform_int(1, 40) : uniform_int(100, 700);
    const Fp8Scaling scaling = uniform_int(0, 1) ? Fp8Scaling::kBlock128 : Fp8Scaling::kPerRow;
    SCOPED_TRACE(testing::Message()
                 << out << "x" << in << " tokens " << tokens << " " << fp8_scaling_name(scaling)
                 << " isa " << isa_name(active_isa()));
    const Fp8Weight w = random_weight(out, in, scaling);
    const Fp8Linear lin(w, std::nullopt, DType::kBF16);
    const Tensor wide = random({tokens, in + 3});
    const Tensor x = wide.slice(1, 1, 1 + in);
    Tensor want = Tensor::empty({tokens, out}, DType::kF32);
    fp8_linear_reference(x, w, nullptr, DType::kBF16, want, lin.rounds_weights_to_bf16(tokens));
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool})
      expect_forward(lin, x, want, p);
  }
}

// A prefill past one 512-token chunk, its rows split over pools of 2 and 3 threads (tasks of
// 64-row multiples that cut 128-row scale blocks and tiles of several blocks).
TEST_F(Fp8Test, LongPrefillOverAPoolMatchesTheReference) {
  ThreadPool two(2), three(3);
  // Per dtype: block scales, per-row scales, power-of-two block scales. The bf16 path holds W
  // in bf16: exact for the last two, rounded for the first where oneDNN's bf16 matmul runs.
  for (int rep = 0; rep < 6; ++rep) {
    const int64_t out = uniform_int(65, 700), in = uniform_int(1, 300);
    const int64_t tokens = uniform_int(513, 1100);
    const DType act = rep % 2 ? DType::kBF16 : DType::kF32;
    const Fp8Scaling scaling = rep / 2 == 1 ? Fp8Scaling::kPerRow : Fp8Scaling::kBlock128;
    const bool pow2 = rep / 2 == 2;
    SCOPED_TRACE(testing::Message()
                 << out << "x" << in << " tokens " << tokens << " " << dtype_name(act) << " "
                 << fp8_scaling_name(scaling) << (pow2 ? " pow2" : ""));
    const Fp8Weight w = random_weight(out, in, scaling, pow2);
    const Fp8Linear lin(w, std::nullopt, act);
    const Tensor wide = random({tokens, in + 3});
    const Tensor x = wide.slice(1, 1, 1 + in);
    Tensor want = Tensor::empty({tokens, out}, DType::kF32);
    if (pow2 || scaling == Fp8Scaling::kPerRow || act == DType::kF32) {
      EXPECT_FALSE(lin.rounds_weights_to_bf16(tokens));
    }
    fp8_linear_reference(x, w, nullptr, act, want, lin.rounds_weights_to_bf16(tokens));
    for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &two, &three}) {
      expect_forward(lin, x, want, p);
    }
  }
}

TEST_F(Fp8Test, BlockQuantizationStaysWithinE4m3Rounding) {
  for (bool ue8m0 : {false, true}) {
    const int64_t out = uniform_int(1, 300), in = uniform_int(1, 300);
    Tensor w = random({out, in}, DType::kF32, -2, 2);
    w.data<float>()[0] = 0;  // zeros stay zero
    const Fp8Weight q = quantize_fp8(w, ue8m0);
    ASSERT_EQ(q.scale_inv.shape(), fp8_scale_shape(out, in));
    const Tensor back = dequantize_fp8(q);
    for (int64_t o = 0; o < out; ++o) {
      for (int64_t i = 0; i < in; ++i) {
        const float s = q.scale_inv.data<float>()[(o / 128) * q.scale_inv.size(1) + i / 128];
        const float orig = w.data<float>()[o * in + i], got = back.data<float>()[o * in + i];
        // Half an e4m3 ulp: 2^-4 relative for normals, 2^-10 of the scale for subnormals.
        EXPECT_LE(std::fabs(got - orig), std::max(std::fabs(orig) / 16, s * 0x1.0p-10f) * 1.0001f)
            << o << "," << i;
      }
    }
    EXPECT_EQ(back.data<float>()[0], 0.0f);
    if (ue8m0) {
      for (int64_t i = 0; i < q.scale_inv.numel(); ++i) {
        int e;
        EXPECT_EQ(std::frexp(q.scale_inv.data<float>()[i], &e), 0.5f) << "not a power of two";
      }
    }
  }
}

// Per-row (channel) quantization: each row's largest magnitude maps to 448, and dequantizing
// multiplies row o by scale o alone (a block-scale reading of the same bytes would not).
TEST_F(Fp8Test, PerRowQuantizationStaysWithinE4m3RoundingOfEachRow) {
  const int64_t out = uniform_int(2, 300), in = uniform_int(1, 300);
  Tensor w = random({out, in}, DType::kF32, -2, 2);
  for (int64_t i = 0; i < in; ++i) w.data<float>()[in + i] *= 64;  // row 1: a larger range
  for (int64_t i = 0; i < in; ++i) w.data<float>()[i] = 0;         // row 0: all zero
  const Fp8Weight q = quantize_fp8_per_row(w);
  ASSERT_EQ(q.scaling, Fp8Scaling::kPerRow);
  ASSERT_EQ(q.scale_inv.shape(), (Shape{out, 1}));
  EXPECT_EQ(q.scale_inv.data<float>()[0], 1.0f);
  const Tensor back = dequantize_fp8(q);
  for (int64_t o = 0; o < out; ++o) {
    const float s = q.scale_inv.data<float>()[o];
    float amax = 0;
    for (int64_t i = 0; i < in; ++i) amax = std::max(amax, std::fabs(w.data<float>()[o * in + i]));
    if (amax > 0) {
      EXPECT_FLOAT_EQ(s, amax / 448) << "row " << o;
    }
    for (int64_t i = 0; i < in; ++i) {
      const float orig = w.data<float>()[o * in + i], got = back.data<float>()[o * in + i];
      EXPECT_LE(std::fabs(got - orig), std::max(std::fabs(orig) / 16, s * 0x1.0p-10f) * 1.0001f)
          << o << "," << i;
    }
  }
}

TEST_F(Fp8Test, ConstructorRejectsBadScalesNamingTheShapes) {
  const Fp8Weight w = random_weight(200, 300);
  Fp8Weight bad = w;
  bad.scale_inv = Tensor::zeros({1, 3}, DType::kF32);
  std::string msg = error_of([&] { Fp8Linear lin(bad); });
  EXPECT_NE(msg.find("[2, 3]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[1, 3]"), std::string::npos) << msg;
  bad = w;
  bad.scale_inv = w.scale_inv.clone();
  bad.scale_inv.data<float>()[4] = std::numeric_limits<float>::infinity();
  msg = error_of([&] { Fp8Linear lin(bad); });
  EXPECT_NE(msg.find("non-finite"), std::string::npos) << msg;
  bad = w;
  bad.weight = Tensor::zeros({200, 300}, DType::kBF16);
  msg = error_of([&] { Fp8Linear lin(bad); });
  EXPECT_NE(msg.find("float8_e4m3fn"), std::string::npos) << msg;
  bad = w;
  bad.scale_inv = w.scale_inv.to(DType::kBF16);
  EXPECT_THROW(Fp8Linear lin(bad), Error);
  // Block scales read as per-row ones: the message names the row layout's shape.
  bad = w;
  bad.scaling = Fp8Scaling::kPerRow;
  msg = error_of([&] { Fp8Linear lin(bad); });
  EXPECT_NE(msg.find("[200, 1]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("per-row"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ctxpar::kernels
