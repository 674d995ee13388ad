// Tensor-level merges: shape checks, then one merge_weights + vector loop per row.
#include "ctxpar/kernels/merge.h"

#include <cmath>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/merge_check.h"
#include "ctxpar/kernels/merge_kernel.h"

namespace ctxpar::kernels {
namespace {

// Row pointer of o[t, h, :] in a [tokens, H, d] tensor.
inline float* row_ptr(Tensor& t, int64_t i, int64_t h) {
  return t.data<float>() + i * t.stride(0) + h * t.stride(1);
}
inline const float* row_ptr(const Tensor& t, int64_t i, int64_t h) {
  return t.data<float>() + i * t.stride(0) + h * t.stride(1);
}
inline float& lse_at(Tensor& t, int64_t i, int64_t h) {
  return t.data<float>()[i * t.stride(0) + h * t.stride(1)];
}
inline float lse_at(const Tensor& t, int64_t i, int64_t h) {
  return t.data<float>()[i * t.stride(0) + h * t.stride(1)];
}

}  // namespace

void merge_attn_states(Tensor& out, Tensor& lse, const Tensor& out_b, const Tensor& lse_b) {
  merge_attn_states(out, lse, out_b, lse_b, active_isa());
}

void merge_attn_states(Tensor& out, Tensor& lse, const Tensor& out_b, const Tensor& lse_b,
                       Isa isa) {
  const detail::MergeShape s = detail::check_merge_attn_states(out, lse, out_b, lse_b);
  const detail::MergeKernels& k = detail::merge_kernels(isa);
  for (int64_t t = 0; t < s.tokens; ++t) {
    for (int64_t h = 0; h < s.heads; ++h) {
      const float lses[2] = {lse_at(lse, t, h), lse_at(lse_b, t, h)};
      float w[2];
      const float merged = detail::merge_weights(2, lses, w);
      const float* rows[2] = {row_ptr(out, t, h), row_ptr(out_b, t, h)};
      // Empty partials drop out entirely: their o is never read.
      const float* used[2];
      float used_w[2];
      int n = 0;
      for (int i = 0; i < 2; ++i) {
        if (w[i] != 0.0f) {
          used[n] = rows[i];
          used_w[n++] = w[i];
        }
      }
      k.weighted_sum(n, used, used_w, s.dim, row_ptr(out, t, h));
      lse_at(lse, t, h) = merged;
    }
  }
}

void merge_partials(const Tensor& outs, const Tensor& lses, Tensor& out, Tensor& lse) {
  merge_partials(outs, lses, out, lse, active_isa());
}

void merge_partials(const Tensor& outs, const Tensor& lses, Tensor& out, Tensor& lse, Isa isa) {
  const detail::MergeShape s = detail::check_merge_partials(outs, lses, out, lse);
  const detail::MergeKernels& k = detail::merge_kernels(isa);
  const int n = static_cast<int>(s.parts);
  std::vector<float> part_lse(n), w(n), used_w(n);
  std::vector<const float*> used(n);
  const float* o_base = outs.data<float>();
  const float* l_base = lses.data<float>();
  for (int64_t t = 0; t < s.tokens; ++t) {
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int i = 0; i < n; ++i) {
        part_lse[i] = l_base[i * lses.stride(0) + t * lses.stride(1) + h * lses.stride(2)];
      }
      const float merged = detail::merge_weights(n, part_lse.data(), w.data());
      int m = 0;
      for (int i = 0; i < n; ++i) {
        if (w[i] == 0.0f) continue;
        used[m] = o_base + i * outs.stride(0) + t * outs.stride(1) + h * outs.stride(2);
        used_w[m++] = w[i];
      }
      k.weighted_sum(m, used.data(), used_w.data(), s.dim, row_ptr(out, t, h));
      lse_at(lse, t, h) = merged;
    }
  }
}

void rescale_partial(Tensor& out, const Tensor& lse_local, const Tensor& all_lses,
                     Tensor& lse_merged) {
  rescale_partial(out, lse_local, all_lses, lse_merged, active_isa());
}

void rescale_partial(Tensor& out, const Tensor& lse_local, const Tensor& all_lses,
                     Tensor& lse_merged, Isa isa) {
  const detail::MergeShape s = detail::check_rescale_partial(out, lse_local, all_lses, lse_merged);
  const detail::MergeKernels& k = detail::merge_kernels(isa);
  const int n = static_cast<int>(s.parts);
  std::vector<float> part_lse(n), w(n);
  const float* l_base = all_lses.data<float>();
  for (int64_t t = 0; t < s.tokens; ++t) {
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int i = 0; i < n; ++i) {
        part_lse[i] =
            l_base[i * all_lses.stride(0) + t * all_lses.stride(1) + h * all_lses.stride(2)];
      }
      const float local = lse_at(lse_local, t, h);  // read before lse_merged (may alias)
      const float merged = detail::merge_weights(n, part_lse.data(), w.data());
      // Every rank scales by exp(lse_own − L) against the same L, so the rescaled partials
      // sum to the merged o.
      float scale = 0.0f;
      if (std::isfinite(local) && std::isfinite(merged)) {
        scale = static_cast<float>(std::exp(static_cast<double>(local) - merged));
      }
      k.scale(row_ptr(out, t, h), s.dim, scale);
      lse_at(lse_merged, t, h) = merged;
    }
  }
}

}  // namespace ctxpar::kernels
