// Helpers of the attention and merge kernel tests: a fresh traced seed per test, random
// paged caches with shuffled block tables, poisoned (NaN) outputs inside wider buffers, and
// the comparisons of DESIGN.md §7 (‖out − ref‖ / ‖ref‖, every element written).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/tensor.h"
#include "ctxpar/kernels/attention.h"

namespace ctxpar::kernels::testing {

inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Every kernel variant this CPU can run (CTXPAR_ISA does not narrow this list: tests cover all).
inline std::vector<Isa> supported_isas() {
  std::vector<Isa> isas{Isa::kScalar};
  if (cpu_features().avx2_fma) isas.push_back(Isa::kAvx2);
  if (cpu_features().avx512) isas.push_back(Isa::kAvx512);
  if (cpu_features().amx_bf16) isas.push_back(Isa::kAmx);
  return isas;
}

class SeededTest : public ::testing::Test {
 protected:
  SeededTest()
      : seed_((static_cast<uint64_t>(std::random_device{}()) << 32) | std::random_device{}()),
        rng_(seed_),
        trace_(__FILE__, __LINE__, "seed " + std::to_string(seed_)) {}

  int64_t uniform_int(int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng_);
  }
  bool coin() { return uniform_int(0, 1) == 1; }

  // Normal values times `sigma`, f32.
  Tensor normal(const Shape& shape, double sigma = 1.0) {
    Tensor t = Tensor::empty(shape, DType::kF32);
    std::normal_distribution<float> d(0.0f, static_cast<float>(sigma));
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(rng_);
    return t;
  }

  // A view of `shape` whose last dim is a column range of rows `pad` elements wider (so the
  // other strides are not the contiguous ones), the whole buffer poisoned with NaN bytes.
  // `buffer` keeps the wider storage for checks that nothing outside the view was written.
  static Tensor poisoned_view(const Shape& shape, int64_t pad, Tensor* buffer = nullptr) {
    Shape wide = shape;
    wide.back() += pad;
    Tensor base = Tensor::empty(wide, DType::kF32);
    base.fill_bytes(0xff);
    if (buffer != nullptr) *buffer = base;
    const int64_t offset = pad / 2;
    return base.slice(static_cast<int>(shape.size()) - 1, offset, offset + shape.back());
  }

  // Copy of `src` (f32) in `dtype`, stored as a strided view when pad > 0.
  static Tensor stored_as(const Tensor& src, DType dtype, int64_t pad) {
    Shape wide = src.shape();
    wide.back() += pad;
    Tensor base = Tensor::zeros(wide, dtype);
    Tensor view = base.slice(src.ndim() - 1, pad, pad + src.shape().back());
    view.copy_from(src);
    return view;
  }

  Tensor i32_tensor(const std::vector<int32_t>& v) {
    Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::kI32);
    if (!v.empty()) std::memcpy(t.raw(), v.data(), v.size() * sizeof(int32_t));
    return t;
  }

  uint64_t seed_;
  std::mt19937_64 rng_;
  ::testing::ScopedTrace trace_;
};

// A paged cache holding several requests, with block ids drawn from a shuffled pool (so block
// tables are not the identity) and unused table entries set to -1.
struct PagedSetup {
  int64_t block_size = 0;
  std::vector<int64_t> req_lens;
  Tensor block_tables;  // [num_reqs, max_blocks] i32
  int64_t num_blocks = 0;
};

inline PagedSetup make_block_tables(std::mt19937_64& rng, int64_t block_size,
                                    const std::vector<int64_t>& req_lens) {
  PagedSetup s;
  s.block_size = block_size;
  s.req_lens = req_lens;
  int64_t needed = 0, max_blocks = 1;
  for (int64_t len : req_lens) {
    needed += (len + block_size - 1) / block_size;
    max_blocks = std::max(max_blocks, (len + block_size - 1) / block_size);
  }
  max_blocks += static_cast<int64_t>(rng() % 3);                // spare table columns
  s.num_blocks = needed + 1 + static_cast<int64_t>(rng() % 4);  // spare blocks
  std::vector<int32_t> ids(static_cast<size_t>(s.num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  const int64_t reqs = static_cast<int64_t>(req_lens.size());
  s.block_tables = Tensor::empty({std::max<int64_t>(reqs, 1), max_blocks}, DType::kI32);
  int32_t* bt = s.block_tables.data<int32_t>();
  std::fill(bt, bt + s.block_tables.numel(), -1);
  size_t next = 0;
  for (int64_t r = 0; r < reqs; ++r) {
    for (int64_t b = 0; b < (req_lens[r] + block_size - 1) / block_size; ++b) {
      bt[r * max_blocks + b] = ids[next++];
    }
  }
  return s;
}

// ‖a − b‖ / ‖b‖ over all elements (b all zero: ‖a‖).
inline double relative_error(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  double diff = 0.0, norm = 0.0;
  const int64_t rows = a.numel() / std::max<int64_t>(a.size(-1), 1);
  std::vector<int64_t> idx(static_cast<size_t>(a.ndim()), 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rest = r;
    for (int d = a.ndim() - 2; d >= 0; --d) {
      idx[d] = rest % a.size(d);
      rest /= a.size(d);
    }
    for (int64_t x = 0; x < a.size(-1); ++x) {
      idx.back() = x;
      const double va = a.item_as_double(idx), vb = b.item_as_double(idx);
      diff += (va - vb) * (va - vb);
      norm += vb * vb;
    }
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

// Checks an attention result against a reference: every element written (no NaN left from
// the poison), rows the reference leaves empty are exactly (0, -inf), ‖out − ref‖/‖ref‖ <= tol,
// and each lse within tol·max(1, |ref|).
// With abs_ref (a kernel that rounds the softmax weights to bf16, attention_rounds_weights):
// each value of o within (2^-8 + tol)·abs_ref, where abs_ref is the reference over |v|
// (Σ_j p_j·|v_j| / Σ_j p_j, twice the bound of the weights' rounding), instead of the norm.
// With lse_tol ([tokens, heads] f32): each lse within its own bound instead.
inline void expect_attention_close(const Tensor& out, const Tensor& lse, const Tensor& out_ref,
                                   const Tensor& lse_ref, double tol,
                                   const Tensor* abs_ref = nullptr,
                                   const Tensor* lse_tol = nullptr) {
  ASSERT_EQ(out.shape(), out_ref.shape());
  ASSERT_EQ(lse.shape(), lse_ref.shape());
  int bad_lse = 0;
  for (int64_t t = 0; t < lse.size(0); ++t) {
    for (int64_t h = 0; h < lse.size(1); ++h) {
      const double l = lse.item_as_double({t, h}), lr = lse_ref.item_as_double({t, h});
      bool row_ok = true;
      for (int64_t x = 0; x < out.size(2); ++x) {
        const double o = out.item_as_double({t, h, x});
        if (!std::isfinite(o) || (lr == -INFINITY && o != 0.0)) row_ok = false;
      }
      const double lse_bound =
          lse_tol != nullptr ? lse_tol->item_as_double({t, h}) : tol * std::max(1.0, std::abs(lr));
      const bool lse_ok = lr == -INFINITY ? l == -INFINITY : std::abs(l - lr) <= lse_bound;
      if ((!row_ok || !lse_ok) && bad_lse++ < 5) {
        ADD_FAILURE() << "row (token " << t << ", head " << h << "): lse " << l << " vs " << lr
                      << " (allowed " << lse_bound << ")"
                      << (row_ok ? "" : ", o has a non-finite value or should be 0");
      }
    }
  }
  EXPECT_EQ(bad_lse, 0);
  if (abs_ref == nullptr) {
    EXPECT_LE(relative_error(out, out_ref), tol);
    return;
  }
  ASSERT_EQ(abs_ref->shape(), out_ref.shape());
  int bad = 0;
  for (int64_t t = 0; t < out.size(0); ++t) {
    for (int64_t h = 0; h < out.size(1); ++h) {
      for (int64_t x = 0; x < out.size(2); ++x) {
        const double o = out.item_as_double({t, h, x}), r = out_ref.item_as_double({t, h, x});
        const double bound = (0x1p-8 + tol) * abs_ref->item_as_double({t, h, x});
        if (!(std::abs(o - r) <= bound) && bad++ < 5) {
          ADD_FAILURE() << "o[" << t << ", " << h << ", " << x << "] " << o << " vs " << r
                        << ", more than " << bound << " apart";
        }
      }
    }
  }
  EXPECT_EQ(bad, 0);
}

// |t| elementwise, contiguous, in t's dtype (exact for the sign-magnitude dtypes of a cache).
inline Tensor abs_values(const Tensor& t) {
  Tensor f = t.to(DType::kF32);
  float* p = f.data<float>();
  for (int64_t i = 0; i < f.numel(); ++i) p[i] = std::abs(p[i]);
  return f.to(t.dtype());
}

// Whether some variant this CPU runs rounds the weights over a kv_dtype cache.
inline bool some_isa_rounds_weights(DType kv_dtype) {
  for (Isa isa : supported_isas()) {
    if (attention_rounds_weights(isa, kv_dtype)) return true;
  }
  return false;
}

inline std::string isa_trace(Isa isa) {
  return "isa " + std::string(isa_name(isa));
}

}  // namespace ctxpar::kernels::testing
