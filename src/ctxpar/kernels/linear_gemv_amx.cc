// The decode GEMV over bf16 weights on the AMX tile unit (GemvKernel::kAmx, linear_gemv.h):
// 16 weight rows × 32 values are one A tile loaded from the weight in place (row stride ldw),
// x (rounded to bf16) is one B tile per 32 values with a column per token, so any token count
// up to kGemvMaxTokens costs one tile product per KiB of weights. It runs from
// kAmxGemvMinTokens tokens, where the FMA kernels need a second register pass.
// The products are those of the f32 path (bf16 × bf16 is exact in f32); only the order of the
// f32 additions differs.
#include <immintrin.h>

#include <cstdint>

#include "ctxpar/core/half.h"
#include "ctxpar/kernels/amx_tile_config.h"
#include "ctxpar/kernels/linear_gemv.h"

namespace ctxpar::kernels::detail {
namespace {

constexpr int64_t kStep = 32;  // bf16 values of a weight row per A tile row
constexpr int kRows = 16;      // weight rows per A tile
static_assert(kGemvMaxTokens <= 16, "a B tile holds 16 token columns");
// Prefetch distance in each of a block's 16 rows (the shift kernel's 1 KiB).
constexpr int64_t kAhead = 512;

// Tiles 0, 1 accumulate [rows, tokens] f32; 2, 3 the weights [rows, 32 values]; 4, 5 x
// [16 pairs, tokens × 2 bf16].
void configure(int rows, int64_t tokens) {
  AmxTileConfig c;
  for (int t : {0, 1}) {
    c.rows[t] = static_cast<uint8_t>(rows);
    c.colsb[t] = static_cast<uint16_t>(tokens * 4);
  }
  for (int t : {2, 3}) {
    c.rows[t] = static_cast<uint8_t>(rows);
    c.colsb[t] = 64;
  }
  for (int t : {4, 5}) {
    c.rows[t] = 16;
    c.colsb[t] = static_cast<uint16_t>(tokens * 4);
  }
  load_tile_config(c);
}

// Rows r·stride, r < rows, of w (one A tile's rows): y[t, r·stride] = Σ x[t, i]·w[r·stride, i]
// + bias[r·stride].
void block(const GemvArgs& a, const uint16_t* w, int rows, int64_t stride, const float* bias,
           float* y) {
  const int64_t steps = a.k / kStep, tail = a.k - steps * kStep;
  const auto* xb = static_cast<const uint16_t*>(a.xp);  // [steps][16 pairs][tokens][2]
  const float* xt = reinterpret_cast<const float*>(xb + steps * 32 * a.tokens);  // [tokens, tail]
  const int64_t x_tile = 32 * a.tokens;         // bf16 values per B tile
  const int64_t w_stride = stride * a.ldw * 2;  // bytes between the tile's rows
  _tile_zero(0);
  _tile_zero(1);
  int64_t s = 0;
  for (; s + 2 <= steps; s += 2) {
    for (int r = 0; r < rows; ++r) {
      // Near a row's end, the head of the next row, which this tile row takes next (x86
      // prefetches past the weight do not fault).
      const uint16_t* row = w + r * stride * a.ldw;
      for (int64_t i = s * kStep + kAhead; i < (s + 2) * kStep + kAhead; i += kStep) {
        const uint16_t* p = i < a.k ? row + i : row + a.ldw + (i - a.k);
        _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
      }
    }
    _tile_loadd(2, w + s * kStep, w_stride);
    _tile_loadd(4, xb + s * x_tile, a.tokens * 4);
    _tile_loadd(3, w + (s + 1) * kStep, w_stride);
    _tile_loadd(5, xb + (s + 1) * x_tile, a.tokens * 4);
    _tile_dpbf16ps(0, 2, 4);
    _tile_dpbf16ps(1, 3, 5);
  }
  if (s < steps) {
    _tile_loadd(2, w + s * kStep, w_stride);
    _tile_loadd(4, xb + s * x_tile, a.tokens * 4);
    _tile_dpbf16ps(0, 2, 4);
  }
  alignas(64) float c0[kRows * kGemvMaxTokens], c1[kRows * kGemvMaxTokens];
  _tile_stored(0, c0, a.tokens * 4);
  _tile_stored(1, c1, a.tokens * 4);
  for (int r = 0; r < rows; ++r) {
    for (int64_t t = 0; t < a.tokens; ++t) {
      float sum = c0[r * a.tokens + t] + c1[r * a.tokens + t];
      for (int64_t i = 0; i < tail; ++i)
        sum += xt[t * tail + i] * bf16::to_f32(w[r * stride * a.ldw + steps * kStep + i]);
      y[t * a.ldy + r * stride] = bias != nullptr ? sum + bias[r * stride] : sum;
    }
  }
}

}  // namespace

void gemv_prepare_x_amx(const float* x, int64_t ldx, int64_t tokens, int64_t k, void* xp) {
  const int64_t steps = k / kStep, tail = k - steps * kStep;
  auto* xb = static_cast<uint16_t*>(xp);
  for (int64_t s = 0; s < steps; ++s) {
    for (int64_t i = 0; i < kStep; ++i) {
      for (int64_t t = 0; t < tokens; ++t) {
        // B tile row i / 2 (a pair of values), column t, element i % 2.
        xb[(s * 16 + i / 2) * tokens * 2 + t * 2 + i % 2] =
            bf16::from_f32(x[t * ldx + s * kStep + i]);
      }
    }
  }
  auto* xt = reinterpret_cast<float*>(xb + steps * 32 * tokens);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t i = 0; i < tail; ++i)
      xt[t * tail + i] = bf16::to_f32(bf16::from_f32(x[t * ldx + steps * kStep + i]));
  }
}

void gemv_bf16_amx(const GemvArgs& a) {
  const auto* w = static_cast<const uint16_t*>(a.w);
  // Each tile row walks its own contiguous run of `len` rows: 16 sequential streams (as in
  // the FMA kernels, linear_gemv_impl.h).
  const int64_t len = a.n / kRows, full = len * kRows;
  if (full > 0) {
    configure(kRows, a.tokens);
    for (int64_t j = 0; j < len; ++j)
      block(a, w + j * a.ldw, kRows, len, a.bias ? a.bias + j : nullptr, a.y + j);
  }
  if (full < a.n) {  // the last rows as a shorter tile: never a row past the range
    configure(static_cast<int>(a.n - full), a.tokens);
    block(a, w + full * a.ldw, static_cast<int>(a.n - full), 1, a.bias ? a.bias + full : nullptr,
          a.y + full);
  }
  _tile_release();
}

}  // namespace ctxpar::kernels::detail
