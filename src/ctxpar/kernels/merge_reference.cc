// Scalar double-precision merges, written straight from DESIGN.md §3 for tests to compare
// against. Same checks as the fast versions.
#include <cmath>
#include <limits>
#include <vector>

#include "ctxpar/kernels/merge.h"
#include "ctxpar/kernels/merge_check.h"

namespace ctxpar::kernels {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Merged lse of the finite entries (the others are empty partials); -inf if none.
double merged_lse(const std::vector<double>& lses) {
  double m = -kInf;
  for (double x : lses) {
    if (std::isfinite(x)) m = std::max(m, x);
  }
  if (m == -kInf) return -kInf;
  double sum = 0.0;
  for (double x : lses) {
    if (std::isfinite(x)) sum += std::exp(x - m);
  }
  return m + std::log(sum);
}

double get(const Tensor& t, std::vector<int64_t> idx) {
  return t.item_as_double(idx);
}

void set(Tensor& t, const std::vector<int64_t>& idx, double v) {
  int64_t off = 0;
  for (size_t i = 0; i < idx.size(); ++i) off += idx[i] * t.stride(static_cast<int>(i));
  t.data<float>()[off] = static_cast<float>(v);
}

// o = Σ_i exp(lse_i − L)·o_i over the non-empty partials, o_i read by read_o(i, x).
template <class ReadO>
std::vector<double> merged_row(const std::vector<double>& lses, double merged, int64_t d,
                               ReadO read_o) {
  std::vector<double> o(d, 0.0);
  if (merged == -kInf) return o;
  for (size_t i = 0; i < lses.size(); ++i) {
    if (!std::isfinite(lses[i])) continue;
    const double w = std::exp(lses[i] - merged);
    for (int64_t x = 0; x < d; ++x) o[x] += w * read_o(i, x);
  }
  return o;
}

}  // namespace

void merge_attn_states_reference(Tensor& out, Tensor& lse, const Tensor& out_b,
                                 const Tensor& lse_b) {
  const detail::MergeShape s = detail::check_merge_attn_states(out, lse, out_b, lse_b);
  for (int64_t t = 0; t < s.tokens; ++t) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const std::vector<double> lses{get(lse, {t, h}), get(lse_b, {t, h})};
      const double merged = merged_lse(lses);
      const std::vector<double> o = merged_row(lses, merged, s.dim, [&](size_t i, int64_t x) {
        return i == 0 ? get(out, {t, h, x}) : get(out_b, {t, h, x});
      });
      for (int64_t x = 0; x < s.dim; ++x) set(out, {t, h, x}, o[x]);
      set(lse, {t, h}, merged);
    }
  }
}

void merge_partials_reference(const Tensor& outs, const Tensor& lses, Tensor& out, Tensor& lse) {
  const detail::MergeShape s = detail::check_merge_partials(outs, lses, out, lse);
  for (int64_t t = 0; t < s.tokens; ++t) {
    for (int64_t h = 0; h < s.heads; ++h) {
      std::vector<double> part(s.parts);
      for (int64_t i = 0; i < s.parts; ++i) part[i] = get(lses, {i, t, h});
      const double merged = merged_lse(part);
      const std::vector<double> o = merged_row(part, merged, s.dim, [&](size_t i, int64_t x) {
        return get(outs, {static_cast<int64_t>(i), t, h, x});
      });
      for (int64_t x = 0; x < s.dim; ++x) set(out, {t, h, x}, o[x]);
      set(lse, {t, h}, merged);
    }
  }
}

void rescale_partial_reference(Tensor& out, const Tensor& lse_local, const Tensor& all_lses,
                               Tensor& lse_merged) {
  const detail::MergeShape s = detail::check_rescale_partial(out, lse_local, all_lses, lse_merged);
  for (int64_t t = 0; t < s.tokens; ++t) {
    for (int64_t h = 0; h < s.heads; ++h) {
      std::vector<double> part(s.parts);
      for (int64_t i = 0; i < s.parts; ++i) part[i] = get(all_lses, {i, t, h});
      const double local = get(lse_local, {t, h});
      const double merged = merged_lse(part);
      const bool keep = std::isfinite(local) && std::isfinite(merged);
      const double scale = keep ? std::exp(local - merged) : 0.0;
      for (int64_t x = 0; x < s.dim; ++x) {
        set(out, {t, h, x}, keep ? scale * get(out, {t, h, x}) : 0.0);
      }
      set(lse_merged, {t, h}, merged);
    }
  }
}

}  // namespace ctxpar::kernels
