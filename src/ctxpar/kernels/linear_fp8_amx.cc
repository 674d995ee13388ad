// FP8 weights times a few tokens (kFp8AmxMaxTokens at a time, bf16 activations) on the AMX tile
// unit (fp8_gemm_amx, linear_fp8_kernel.h). The FMA GEMV pays its e4m3 widening and one FMA per
// weight per token, so from 3-4 tokens it is compute bound, and the prefill path's dequantized
// panels cost a conversion pass per call whatever the token count (fp8_bench Fp8Gemv 7168 ×
// 18432, 1 thread, AMX Xeon VM: the GEMV at 4 tokens 0.56 of the read ceiling, the prefill
// path at 8 tokens 0.09; this kernel 0.64-0.66 at 4 and 8 tokens, 0.53 at 16).
//
// Per 32 weight rows (two A tiles of 16 rows) and one 128-value K block at a time:
//   each row's 128 e4m3 bytes are widened to their bf16 values (exact; integer ops, with the
//   subnormals from a table) into a 4 KiB scratch per A tile;
//   four k-steps of tile products C[g][n] += A[g] · B[n], B = x in VNNI pairs (one or two
//   tiles of 16 token columns, gemv_prepare_x_amx's layout);
//   with 128×128 block scales the C tiles are then stored and added into f32 sums times the
//   block's scale (one scale per row block: once, after the last K block), so the scales stay
//   out of the products: each product is a bf16 e4m3 value times bf16 x, exact in f32, as in
//   the FMA GEMV; only the order of the f32 additions differs.
// The last k % 32 values are added in scalar code from the f32 tail of the prepared x.
// The widening was first the FMA GEMV's (to f16, vcvtph2ps, then vcvtne2ps2bf16): from L2 it
// took 69 µs per MiB of weights against 31 µs for the integer one (1 thread, 8 tokens).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "ctxpar/core/half.h"
#include "ctxpar/kernels/amx_tile_config.h"
#include "ctxpar/kernels/linear_fp8_kernel.h"

namespace ctxpar::kernels::detail {
namespace {

constexpr int kRows = 16;      // weight rows per A tile
constexpr int kGroups = 2;     // A tiles per pass over a K block: 32 rows share B's loads
constexpr int64_t kStep = 32;  // values per k-step (one bf16 tile row)
constexpr int kStepsPerBlock = static_cast<int>(kFp8Block / kStep);
constexpr int kTokenTile = 16;  // token columns per B / C tile
static_assert(kFp8AmxMaxTokens <= 2 * kTokenTile, "two token tiles: C[2][2], A[2], B[2]");

// C tiles 0-3 (group g, token tile n at 2g + n), A tiles 4-5, B tiles 6-7.
void configure(int64_t tokens) {
  AmxTileConfig c;
  for (int n = 0; n < 2; ++n) {
    const int64_t cols = std::clamp<int64_t>(tokens - n * kTokenTile, 0, kTokenTile);
    if (cols == 0) continue;
    for (int g = 0; g < kGroups; ++g) {
      c.rows[2 * g + n] = kRows;
      c.colsb[2 * g + n] = static_cast<uint16_t>(cols * 4);
    }
    c.rows[6 + n] = kRows;
    c.colsb[6 + n] = static_cast<uint16_t>(cols * 4);
  }
  for (int g = 0; g < kGroups; ++g) {
    c.rows[4 + g] = kRows;
    c.colsb[4 + g] = 64;
  }
  load_tile_config(c);
}

// The bf16 bits of the e4m3 subnormals m · 2^-9, m < 8 (m 0: zero), at lanes 0-7 of vpermw's
// table: bf16 has no room for them as denormals, which the tile unit reads as zero.
__m512i subnormal_table() {
  alignas(64) uint16_t t[32] = {};
  for (int m = 0; m < 8; ++m) t[m] = bf16::from_f32(static_cast<float>(m) / 512.0f);
  return _mm512_load_si512(t);
}

// 32 e4m3 values → their 32 bf16 values, in order (exact). A normal e4m3 s.eeee.mmm is the
// bf16 s.(e + 120).mmm0000; a subnormal (e 0) comes from the table.
inline __m512i widen(const uint8_t* p, __m512i subnormals) {
  const __m512i s = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  const __m512i magnitude = _mm512_and_si512(_mm512_slli_epi16(s, 4), _mm512_set1_epi16(0x07F0));
  __m512i v = _mm512_add_epi16(magnitude, _mm512_set1_epi16(120 << 7));
  // Lanes with e 0 take table[m]: the index is the low 5 bits, 0 0 m there.
  v = _mm512_mask_permutexvar_epi16(v, _mm512_testn_epi16_mask(s, _mm512_set1_epi16(0x78)), s,
                                    subnormals);
  return _mm512_or_si512(v, _mm512_and_si512(s, _mm512_set1_epi16(-32768)));  // the sign
}

// The tile operands of tile n of C: token columns [16n, 16n + cols).
template <int kTiles>
void products(const uint16_t* a_scratch, const uint16_t* xb, int64_t tokens, int steps) {
  for (int s = 0; s < steps; ++s) {
    const uint16_t* b = xb + s * 32 * tokens;  // [16 pairs][tokens][2]
    _tile_loadd(6, b, tokens * 4);
    if constexpr (kTiles == 2) _tile_loadd(7, b + 2 * kTokenTile, tokens * 4);
    _tile_loadd(4, a_scratch + s * kStep, kFp8Block * 2);
    _tile_loadd(5, a_scratch + kRows * kFp8Block + s * kStep, kFp8Block * 2);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(2, 5, 6);
    if constexpr (kTiles == 2) {
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
}

// dst[i] += src[i] · f for i < n.
inline void add_scaled(const float* src, float f, int64_t n, float* dst) {
  const __m512 fv = _mm512_set1_ps(f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = n - i >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(
        dst + i, m,
        _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, src + i), fv, _mm512_maskz_loadu_ps(m, dst + i)));
  }
}

// Stores C tile `tile` ([16 rows, cols] f32, row stride cols) to c and zeroes it.
inline void take(int tile, float* c, int64_t cols) {
  switch (tile) {  // tile numbers must be immediates
    case 0:
      _tile_stored(0, c, cols * 4);
      _tile_zero(0);
      break;
    case 1:
      _tile_stored(1, c, cols * 4);
      _tile_zero(1);
      break;
    case 2:
      _tile_stored(2, c, cols * 4);
      _tile_zero(2);
      break;
    default:
      _tile_stored(3, c, cols * 4);
      _tile_zero(3);
      break;
  }
}

// sums[r][t] += C[g][n](r, t) · f over the C tiles, which are then zeroed. sums: [32 rows,
// tokens] f32.
template <int kTiles>
void fold(float* sums, int64_t tokens, float f) {
  alignas(64) float c[kRows * kTokenTile];
  for (int g = 0; g < kGroups; ++g) {
    float* rows = sums + g * kRows * tokens;
    if constexpr (kTiles == 1) {  // the tile's rows are the group's sums rows, back to back
      take(2 * g, c, tokens);
      add_scaled(c, f, kRows * tokens, rows);
    } else {
      for (int n = 0; n < kTiles; ++n) {
        const int64_t cols = std::min<int64_t>(kTokenTile, tokens - n * kTokenTile);
        take(2 * g + n, c, cols);
        for (int r = 0; r < kRows; ++r)
          add_scaled(c + r * cols, f, cols, rows + r * tokens + n * kTokenTile);
      }
    }
  }
}

template <int kTiles>
void run(const Fp8AmxArgs& a) {
  const int64_t steps = a.k / kStep, tail = a.k - steps * kStep;
  const int64_t k_blocks = (steps + kStepsPerBlock - 1) / kStepsPerBlock;
  const auto* xb = static_cast<const uint16_t*>(a.xp);
  const auto* xt = reinterpret_cast<const float*>(xb + steps * 32 * a.tokens);  // [tokens, tail]
  const float* table = e4m3_table();
  // Widened rows of one K block, [kGroups · 16 rows][128] bf16; rows past the range stay 0.
  alignas(64) uint16_t scratch[kGroups * kRows * kFp8Block];
  float sums[kGroups * kRows * kFp8AmxMaxTokens];  // [32 rows][tokens]
  const __m512i subnormals = subnormal_table();
  configure(a.tokens);
  _tile_zero(0);
  _tile_zero(2);
  if constexpr (kTiles == 2) {
    _tile_zero(1);
    _tile_zero(3);
  }
  for (int64_t g0 = a.r0; g0 < a.r0 + a.nr; g0 += kGroups * kRows) {
    const int rows = static_cast<int>(std::min<int64_t>(kGroups * kRows, a.r0 + a.nr - g0));
    const float* block_scale = a.scale + (g0 / kFp8Block) * a.lds;
    std::memset(sums, 0, sizeof(float) * static_cast<size_t>(rows * a.tokens));
    if (rows < kGroups * kRows) std::memset(scratch, 0, sizeof(scratch));
    for (int64_t kb = 0; kb < k_blocks; ++kb) {
      const int bsteps =
          static_cast<int>(std::min<int64_t>(kStepsPerBlock, steps - kb * kStepsPerBlock));
      for (int r = 0; r < rows; ++r) {
        const uint8_t* src = a.w + (g0 + r) * a.ldw + kb * kFp8Block;
        if (kb + 2 < k_blocks) {  // the row's bytes two K blocks on
          _mm_prefetch(reinterpret_cast<const char*>(src + 2 * kFp8Block), _MM_HINT_T0);
          _mm_prefetch(reinterpret_cast<const char*>(src + 2 * kFp8Block + 64), _MM_HINT_T0);
        }
        for (int s = 0; s < bsteps; ++s)
          _mm512_store_si512(scratch + r * kFp8Block + s * kStep,
                             widen(src + s * kStep, subnormals));
      }
      products<kTiles>(scratch, xb + kb * kStepsPerBlock * 32 * a.tokens, a.tokens, bsteps);
      // Block scales fold per K block; one scale for the row block (lds 0) once at the end.
      if (a.lds != 0) fold<kTiles>(sums, a.tokens, block_scale[kb]);
    }
    if (a.lds == 0 && k_blocks > 0) fold<kTiles>(sums, a.tokens, block_scale[0]);
    for (int r = 0; r < rows; ++r) {
      const uint8_t* row = a.w + (g0 + r) * a.ldw;
      for (int64_t t = 0; t < a.tokens; ++t) {
        float sum = sums[r * a.tokens + t];
        for (int64_t i = 0; i < tail; ++i) {
          const int64_t col = steps * kStep + i;
          sum += xt[t * tail + i] * table[row[col]] * block_scale[col / kFp8Block];
        }
        a.y[t * a.ldy + g0 + r] = sum;
      }
    }
  }
  _tile_release();
}

}  // namespace

void fp8_gemm_amx(const Fp8AmxArgs& a) {
  if (a.tokens > kTokenTile) {
    run<2>(a);
  } else {
    run<1>(a);
  }
}

}  // namespace ctxpar::kernels::detail
