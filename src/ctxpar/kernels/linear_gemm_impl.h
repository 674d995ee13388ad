// Internal: the prefill GEMM (linear_gemm.h) as a template over a simd vector type V
// (simd.h). Included only by linear_gemm_{scalar,avx2}.cc; internal linkage keeps the per-ISA
// copies apart.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ctxpar/core/half.h"
#include "ctxpar/kernels/linear_gemm.h"

namespace ctxpar::kernels::detail {
namespace {

constexpr int kTileTokens = static_cast<int>(kGemmTileTokens);

// W panel width: two vectors of output columns.
template <class V>
constexpr int64_t gemm_panel_cols() {
  return 2 * V::kWidth;
}

inline float gemm_load_one(const uint16_t* p) {
  return bf16::to_f32(*p);
}
inline float gemm_load_one(const float* p) {
  return *p;
}
template <class V>
inline V gemm_load(const uint16_t* p) {
  return V::load_bf16(p);
}
template <class V>
inline V gemm_load(const float* p) {
  return V::load(p);
}

// w [nc, kc] bf16 or f32 (row stride ldw, offset to the block's first row and k) → wp as
// ceil(nc / P) panels of [kc][P] f32, P = gemm_panel_cols<V>(), columns past nc zero. Full
// kWidth × kWidth squares go through one load per row and a register transpose.
template <class V, class WT>
void gemm_pack_w(const WT* w, int64_t ldw, int64_t nc, int64_t kc, float* wp) {
  constexpr int kW = V::kWidth;
  constexpr int64_t kP = gemm_panel_cols<V>();
  for (int64_t j = 0; j < nc; j += kP) {
    float* panel = wp + j * kc;
    const int64_t cols = std::min(kP, nc - j);
    int64_t i = 0;
    if (cols == kP) {
      for (; i + kW <= kc; i += kW) {
        for (int h = 0; h < 2; ++h) {
          V r[kW];
          for (int q = 0; q < kW; ++q) r[q] = gemm_load<V>(w + (j + h * kW + q) * ldw + i);
          transpose(r);  // r[q] = k value i + q of the kW columns
          for (int q = 0; q < kW; ++q) r[q].store(panel + (i + q) * kP + h * kW);
        }
      }
    }
    for (; i < kc; ++i) {
      for (int64_t c = 0; c < kP; ++c) {
        panel[i * kP + c] = c < cols ? gemm_load_one(w + (j + c) * ldw + i) : 0.0f;
      }
    }
  }
}

// The W block [nc, kc] at row j0, k0 packed as gemm_pack_w does: bf16 rows directly, a
// dequantizer's f32 rows one panel at a time through an L1-sized scratch.
template <class V>
void gemm_pack_block(const GemmWeights& w, int64_t j0, int64_t nc, int64_t k0, int64_t kc,
                     float* wp) {
  if (w.bf16 != nullptr) {
    gemm_pack_w<V>(w.bf16 + j0 * w.ldw + k0, w.ldw, nc, kc, wp);
    return;
  }
  constexpr int64_t kP = gemm_panel_cols<V>();
  thread_local std::vector<float> rows;  // [kP, kGemmDepth]
  rows.resize(static_cast<size_t>(kP * kGemmDepth));
  for (int64_t j = 0; j < nc; j += kP) {
    const int64_t cols = std::min(kP, nc - j);
    w.rows_f32(w.ctx, j0 + j, cols, k0, kc, rows.data(), kc);
    gemm_pack_w<V>(rows.data(), kc, cols, kc, wp + j * kc);
  }
}

// Tile y [6, P] (row stride ldy) from an x panel [kc][6] and a W panel [kc][P]. kFirst: the
// first depth block, so y = sums (+ bias); else y += sums.
template <class V, bool kFirst>
inline void gemm_tile(int64_t kc, const float* xp, const float* wp, const float* bias, float* y,
                      int64_t ldy) {
  constexpr int kW = V::kWidth;
  V acc[kTileTokens][2];
  for (int r = 0; r < kTileTokens; ++r) acc[r][0] = acc[r][1] = V::zero();
  for (int64_t i = 0; i < kc; ++i) {
    const V w0 = V::load(wp), w1 = V::load(wp + kW);
    for (int r = 0; r < kTileTokens; ++r) {
      const V a = V::set1(xp[r]);
      acc[r][0] = mul_add(a, w0, acc[r][0]);
      acc[r][1] = mul_add(a, w1, acc[r][1]);
    }
    xp += kTileTokens;
    wp += 2 * kW;
  }
  for (int r = 0; r < kTileTokens; ++r) {
    for (int h = 0; h < 2; ++h) {
      float* out = y + r * ldy + h * kW;
      V v = acc[r][h];
      if constexpr (kFirst) {
        if (bias != nullptr) v = v + V::load(bias + h * kW);
      } else {
        v = v + V::load(out);
      }
      v.store(out);
    }
  }
}

// A tile cut by the last token or the last column: the whole tile into a scratch tile, then
// the part that exists.
template <class V>
void gemm_edge_tile(bool first, int64_t kc, const float* xp, const float* wp, const float* bias,
                    int64_t rows, int64_t cols, float* y, int64_t ldy) {
  constexpr int64_t kP = gemm_panel_cols<V>();
  float tile[kTileTokens * kP];
  gemm_tile<V, true>(kc, xp, wp, nullptr, tile, kP);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const float base = first ? (bias != nullptr ? bias[c] : 0.0f) : y[r * ldy + c];
      y[r * ldy + c] = base + tile[r * kP + c];
    }
  }
}

template <class V>
void gemm_rows(const GemmArgs& a) {
  constexpr int64_t kP = gemm_panel_cols<V>();
  // Whole panels of the block, so a block's panels never spill into the next one's.
  constexpr int64_t kBlockRows = (kGemmBlockRows + kP - 1) / kP * kP;
  constexpr int64_t kBlockPanels = kGemmBlockTokens / kGemmTileTokens;
  static_assert(kGemmBlockTokens % kGemmTileTokens == 0);
  thread_local std::vector<float> wp;  // [kBlockRows / kP][<= kGemmDepth][kP]
  wp.resize(static_cast<size_t>(kBlockRows * kGemmDepth));
  const int64_t panels = (a.tokens + kGemmTileTokens - 1) / kGemmTileTokens;
  for (int64_t j0 = 0; j0 < a.n; j0 += kBlockRows) {
    const int64_t nc = std::min(kBlockRows, a.n - j0);
    for (int64_t k0 = 0; k0 < a.k; k0 += kGemmDepth) {
      const int64_t kc = std::min(kGemmDepth, a.k - k0);
      const bool first = k0 == 0;
      gemm_pack_block<V>(a.w, j0, nc, k0, kc, wp.data());
      const float* x_block = a.xp + k0 * panels * kGemmTileTokens;  // this depth block's panels
      for (int64_t p0 = 0; p0 < panels; p0 += kBlockPanels) {
        const int64_t p1 = std::min(panels, p0 + kBlockPanels);
        for (int64_t j = 0; j < nc; j += kP) {
          const float* w_panel = wp.data() + j * kc;
          const float* bias = a.bias != nullptr ? a.bias + j0 + j : nullptr;
          const int64_t cols = std::min(kP, nc - j);
          for (int64_t p = p0; p < p1; ++p) {
            const float* x_panel = x_block + p * kc * kGemmTileTokens;
            const int64_t t0 = p * kGemmTileTokens;
            const int64_t rows = std::min(kGemmTileTokens, a.tokens - t0);
            float* y = a.y + t0 * a.ldy + j0 + j;
            if (rows < kGemmTileTokens || cols < kP) {
              gemm_edge_tile<V>(first, kc, x_panel, w_panel, bias, rows, cols, y, a.ldy);
            } else if (first) {
              gemm_tile<V, true>(kc, x_panel, w_panel, bias, y, a.ldy);
            } else {
              gemm_tile<V, false>(kc, x_panel, w_panel, nullptr, y, a.ldy);
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace ctxpar::kernels::detail
