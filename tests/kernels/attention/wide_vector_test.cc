// The AVX-512 variants cannot run on a CPU without AVX-512, but they are the shared templates
// instantiated over a 16-lane vector. Here the same templates are instantiated over a plain
// C++ 16-lane (and 8-lane) vector and must agree with the scalar variant on random jobs, so
// everything that depends on the width — pair lane order over 32 values, tails, padding of
// score tiles — is checked on any CPU. What remains untested without the hardware is only
// the few intrinsics in simd_avx512.h, each the 512-bit twin of a tested simd_avx2.h line.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "attention_test_util.h"
#include "ctxpar/core/fp8.h"
#include "ctxpar/core/half.h"
#include "ctxpar/kernels/attention_kernel_impl.h"
#include "ctxpar/kernels/merge_kernel_impl.h"

namespace ctxpar::kernels::testing {
namespace {

// A W-lane vector of plain floats with the primitives of simd.h.
template <int W>
struct WideVec {
  static constexpr int kWidth = W;
  float v[W];

  static WideVec zero() { return set1(0.0f); }
  static WideVec set1(float x) {
    WideVec r;
    for (float& e : r.v) e = x;
    return r;
  }
  static WideVec load(const float* p) {
    WideVec r;
    for (int i = 0; i < W; ++i) r.v[i] = p[i];
    return r;
  }
  void store(float* p) const {
    for (int i = 0; i < W; ++i) p[i] = v[i];
  }
  static void load_bf16_pair(const uint16_t* p, WideVec& even, WideVec& odd) {
    for (int i = 0; i < W; ++i) {
      even.v[i] = bf16::to_f32(p[2 * i]);
      odd.v[i] = bf16::to_f32(p[2 * i + 1]);
    }
  }
  static void load_fp8_pair(const uint8_t* p, WideVec& even, WideVec& odd) {
    for (int i = 0; i < W; ++i) {
      even.v[i] = fp8_e4m3::to_f32(p[2 * i]) * simd::kFp8LoadFactor;
      odd.v[i] = fp8_e4m3::to_f32(p[2 * i + 1]) * simd::kFp8LoadFactor;
    }
  }
  template <class F>
  static WideVec map2(WideVec a, WideVec b, F f) {
    WideVec r;
    for (int i = 0; i < W; ++i) r.v[i] = f(a.v[i], b.v[i]);
    return r;
  }
  friend WideVec operator+(WideVec a, WideVec b) { return map2(a, b, std::plus<float>()); }
  friend WideVec operator-(WideVec a, WideVec b) { return map2(a, b, std::minus<float>()); }
  friend WideVec operator*(WideVec a, WideVec b) { return map2(a, b, std::multiplies<float>()); }
  friend WideVec mul_add(WideVec a, WideVec b, WideVec c) { return a * b + c; }
  friend WideVec max(WideVec a, WideVec b) {
    return map2(a, b, [](float x, float y) { return x > y ? x : y; });
  }
  friend float reduce_add(WideVec a) {
    float s = 0.0f;
    for (float e : a.v) s += e;
    return s;
  }
  friend float reduce_max(WideVec a) {
    float m = a.v[0];
    for (float e : a.v) m = e > m ? e : m;
    return m;
  }
  friend void reduce_add4(WideVec a, WideVec b, WideVec c, WideVec d, float* out) {
    out[0] = reduce_add(a);
    out[1] = reduce_add(b);
    out[2] = reduce_add(c);
    out[3] = reduce_add(d);
  }
  friend void transpose(WideVec (&r)[W]) {
    for (int i = 0; i < W; ++i) {
      for (int j = i + 1; j < W; ++j) std::swap(r[i].v[j], r[j].v[i]);
    }
  }
  friend WideVec exp2(WideVec a) {
    WideVec r;
    for (int i = 0; i < W; ++i) r.v[i] = a.v[i] >= -126.0f ? std::exp2(a.v[i]) : 0.0f;
    return r;
  }
};

// One random attention job with its buffers.
struct RandomJob {
  std::vector<float> k_f32, v_f32, q, out, lse;
  std::vector<uint16_t> k_bf16, v_bf16;
  std::vector<uint8_t> k_fp8, v_fp8;
  std::vector<int32_t> table;
  std::vector<const float*> q_rows;
  std::vector<float*> out_rows, lse_rows;
  std::vector<int64_t> key_end;
  detail::AttnJob job;
};

class WideVectorTest : public SeededTest {
 protected:
  void make(RandomJob& x, detail::KvDType dtype, int64_t dk, int64_t dv, bool v_in_k) {
    const int heads = static_cast<int>(uniform_int(1, 3));
    // Up to 21: above 16 a bf16 tile is converted to f32 once (kDirectBf16Rows); 3 × 21 rows
    // fit one job.
    const int head_rows = std::vector<int>{1, 2, 4, 5, 8, 13, 16, 21}[uniform_int(0, 7)];
    const int64_t keys = std::vector<int64_t>{0, 1, 37, 64, 65, 200, 700}[uniform_int(0, 6)];
    const bool paged = coin();
    const int64_t block = std::vector<int64_t>{1, 16, 48}[uniform_int(0, 2)];
    const int64_t blocks = paged ? (keys + block - 1) / block + 2 : 1;
    const int64_t slots = paged ? blocks * block : keys;
    // Rows [slots, heads, dk] (V likewise, or inside the K rows).
    const int64_t width = dk;
    auto fill = [&](std::vector<float>& f, int64_t n) {
      f.resize(static_cast<size_t>(n));
      for (float& e : f) e = static_cast<float>(uniform(-1.5, 1.5));
    };
    fill(x.k_f32, slots * heads * width);
    if (!v_in_k) fill(x.v_f32, slots * heads * dv);
    const char* kbase = reinterpret_cast<const char*>(x.k_f32.data());
    const char* vbase = reinterpret_cast<const char*>(x.v_f32.data());
    size_t esize = 4;
    if (dtype == detail::KvDType::kBF16) {
      for (float f : x.k_f32) x.k_bf16.push_back(bf16::from_f32(f));
      for (float f : x.v_f32) x.v_bf16.push_back(bf16::from_f32(f));
      kbase = reinterpret_cast<const char*>(x.k_bf16.data());
      vbase = reinterpret_cast<const char*>(x.v_bf16.data());
      esize = 2;
    } else if (dtype == detail::KvDType::kF8E4M3) {
      for (float f : x.k_f32) x.k_fp8.push_back(fp8_e4m3::from_f32(f));
      for (float f : x.v_f32) x.v_fp8.push_back(fp8_e4m3::from_f32(f));
      kbase = reinterpret_cast<const char*>(x.k_fp8.data());
      vbase = reinterpret_cast<const char*>(x.v_fp8.data());
      esize = 1;
    }
    if (v_in_k) vbase = kbase;
    const int64_t v_width = v_in_k ? width : dv;
    detail::AttnJob& j = x.job;
    j.dtype = dtype;
    j.dk = dk;
    j.dv = dv;
    j.v_in_k_row = v_in_k;
    j.keys.k = kbase;
    j.keys.v = vbase;
    j.keys.k_row_stride = static_cast<int64_t>(heads * width * esize);
    j.keys.v_row_stride = static_cast<int64_t>(heads * v_width * esize);
    if (paged) {
      x.table.resize(static_cast<size_t>(blocks));
      std::iota(x.table.begin(), x.table.end(), 0);
      std::shuffle(x.table.begin(), x.table.end(), rng_);
      j.keys.block_table = x.table.data();
      j.keys.block_size = block;
      j.keys.k_block_stride = block * j.keys.k_row_stride;
      j.keys.v_block_stride = block * j.keys.v_row_stride;
    }
    j.kv_heads = heads;
    j.k_head_stride = static_cast<int64_t>(width * esize);
    j.v_head_stride = static_cast<int64_t>(v_width * esize);
    j.rows = heads * head_rows;
    j.key_begin = keys > 0 ? uniform_int(0, keys / 3) : 0;
    j.key_end = keys > 0 ? uniform_int(j.key_begin, keys) : 0;
    j.scale = static_cast<float>(uniform(0.05, 0.3));
    fill(x.q, j.rows * dk);
    x.out.assign(static_cast<size_t>(j.rows * dv), NAN);
    x.lse.assign(static_cast<size_t>(j.rows), NAN);
    for (int r = 0; r < j.rows; ++r) {
      x.q_rows.push_back(x.q.data() + r * dk);
      x.out_rows.push_back(x.out.data() + r * dv);
      x.lse_rows.push_back(x.lse.data() + r);
      x.key_end.push_back(uniform_int(j.key_begin - 2, j.key_end + 2));
    }
    j.q = x.q_rows.data();
    j.out = x.out_rows.data();
    j.lse = x.lse_rows.data();
    j.row_key_end = coin() ? x.key_end.data() : nullptr;
  }

  // Runs the job with run(job, scratch) and returns (out, lse).
  template <class Run>
  std::pair<std::vector<float>, std::vector<float>> run_with(RandomJob& x, Run run) {
    std::fill(x.out.begin(), x.out.end(), NAN);
    std::fill(x.lse.begin(), x.lse.end(), NAN);
    std::vector<float> scratch(
        static_cast<size_t>(detail::attn_scratch_layout(x.job.dk, x.job.dv).total), NAN);
    run(x.job, scratch.data());
    return {x.out, x.lse};
  }
};

void expect_same(const std::vector<float>& out, const std::vector<float>& lse,
                 const std::vector<float>& ref_out, const std::vector<float>& ref_lse, int64_t dv) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_TRUE(std::isfinite(out[i])) << "element " << i;
    diff += (out[i] - ref_out[i]) * double(out[i] - ref_out[i]);
    norm += ref_out[i] * double(ref_out[i]);
  }
  EXPECT_LE(std::sqrt(diff), 1e-5 * std::sqrt(norm) + 1e-30);
  for (size_t r = 0; r < lse.size(); ++r) {
    if (ref_lse[r] == kNegInf) {
      EXPECT_EQ(lse[r], kNegInf) << "row " << r;
      for (int64_t i = 0; i < dv; ++i) EXPECT_EQ(out[r * dv + i], 0.0f);
    } else {
      EXPECT_NEAR(lse[r], ref_lse[r], 1e-5 * std::max(1.0f, std::abs(ref_lse[r]))) << "row " << r;
    }
  }
}

TEST_F(WideVectorTest, AttentionJobOver8And16LanesMatchesTheScalarVariant) {
  // (dk, dv): GQA heads, MLA's latent (V inside the K rows), and widths with tails past the
  // last 32-value pair step.
  const std::vector<std::pair<int64_t, int64_t>> dims{{64, 64},   {128, 128}, {192, 128},
                                                      {576, 512}, {80, 80},   {40, 24}};
  for (int round = 0; round < 60; ++round) {
    const auto [dk, dv] = dims[uniform_int(0, static_cast<int64_t>(dims.size()) - 1)];
    const auto dtype = std::vector<detail::KvDType>{detail::KvDType::kF32, detail::KvDType::kBF16,
                                                    detail::KvDType::kF8E4M3}[uniform_int(0, 2)];
    const bool v_in_k = dv <= dk && uniform_int(0, 2) == 0;
    SCOPED_TRACE("round " + std::to_string(round) + ", dk " + std::to_string(dk) + ", dv " +
                 std::to_string(dv) + ", KvDType " + std::to_string(static_cast<int>(dtype)) +
                 (v_in_k ? ", v in k rows" : ""));
    RandomJob x;
    make(x, dtype, dk, dv, v_in_k);
    SCOPED_TRACE("rows " + std::to_string(x.job.rows) + ", heads " +
                 std::to_string(x.job.kv_heads) + ", keys [" + std::to_string(x.job.key_begin) +
                 ", " + std::to_string(x.job.key_end) + ")");
    const auto ref = run_with(x, detail::run_attention_job_scalar);
    const auto w16 = run_with(x, detail::run_job_for_isa<WideVec<16>>);
    expect_same(w16.first, w16.second, ref.first, ref.second, dv);
    const auto w8 = run_with(x, detail::run_job_for_isa<WideVec<8>>);
    expect_same(w8.first, w8.second, ref.first, ref.second, dv);
  }
}

TEST_F(WideVectorTest, MergeLoopsOver16LanesMatchDouble) {
  const detail::MergeKernels wide = detail::make_merge_kernels<WideVec<16>>();
  for (int round = 0; round < 20; ++round) {
    const int n = static_cast<int>(uniform_int(0, 8));
    const int64_t d = uniform_int(0, 100);
    std::vector<std::vector<float>> rows(n, std::vector<float>(d));
    std::vector<const float*> ptrs;
    std::vector<float> w(n);
    for (int p = 0; p < n; ++p) {
      for (float& e : rows[p]) e = static_cast<float>(uniform(-2, 2));
      ptrs.push_back(rows[p].data());
      w[p] = static_cast<float>(uniform(0, 1));
    }
    std::vector<float> out(d, NAN);
    wide.weighted_sum(n, ptrs.data(), w.data(), d, out.data());
    for (int64_t i = 0; i < d; ++i) {
      double expect = 0;
      for (int p = 0; p < n; ++p) expect += double(w[p]) * rows[p][i];
      EXPECT_NEAR(out[i], expect, 1e-5);
    }
    if (n > 0) {
      const float s = coin() ? 0.0f : static_cast<float>(uniform(0, 3));
      std::vector<float> o = rows[0];
      if (s == 0.0f) o.assign(d, NAN);  // garbage that must become 0
      wide.scale(o.data(), d, s);
      for (int64_t i = 0; i < d; ++i) EXPECT_FLOAT_EQ(o[i], s == 0.0f ? 0.0f : rows[0][i] * s);
    }
  }
}

}  // namespace
}  // namespace ctxpar::kernels::testing
