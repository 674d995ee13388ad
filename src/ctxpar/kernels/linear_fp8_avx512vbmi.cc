// The FP8 decode GEMV with AVX-512 BF16 dot products (fp8_gemv_bf16, linear_fp8_kernel.h), for
// bf16 activations. e4m3 bytes become their exact bf16 bits through two 128-entry byte tables
// indexed by the magnitude bits (vpermi2b, AVX-512 VBMI): one gives each value's high byte (the
// sign is or-ed in), the other its low byte, and two byte unpacks pair them into words. 64
// weights cost 5 shuffles and 2 vdpbf16ps per token, where the f16 path
// (linear_fp8_kernel_avx512.cc) spends 9 conversions and 4 FMAs, which bound one core below its
// read bandwidth. bf16(x)·e4m3 is exact in f32; the sums of each 128-value block are scaled by
// the block's scale with one FMA, so the result is fp8_linear_reference's (bf16 activations) up
// to the order of the f32 additions.
// Measured (fp8_bench Fp8Gemv, AMD EPYC Zen 4 VM, fractions of the read ceiling, against the f16
// path in the same build): 1 thread, 1 token, 7168 × 18432 0.49-0.55 -> 0.81-0.89, the short
// rows of 1536 and 2048 values 0.45-0.53 -> 0.65-0.91; 2 tokens 0.44-0.46 -> 0.77-0.87, 4 tokens
// 0.34 -> 0.53-0.56 (there the products, 8 per 64 weights, bound one core). Each row's bytes
// requested 4 KiB ahead into L2: none read 0.60-0.69 (short rows 0.32-0.39), 2 KiB 0.88 but 0.66
// for short rows, 8 KiB 0.81. x as memory operands rather than in registers: 2 tokens 0.59 ->
// 0.77. Not measured on Intel cores.
#if !defined(__AVX512BF16__) || !defined(__AVX512VBMI__)
#error "linear_fp8_avx512vbmi.cc needs -mavx512bf16 -mavx512vbmi"
#endif

// GCC 12's AVX-512 warning workaround.
#include "ctxpar/kernels/simd_avx512.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "ctxpar/core/fp8.h"
#include "ctxpar/core/half.h"
#include "ctxpar/kernels/linear_fp8_kernel.h"

namespace ctxpar::kernels::detail {
namespace {

constexpr int64_t kChunk = 64;  // weights per conversion: one zmm of e4m3 bytes
// Rows per register block: one token takes 4 rows (8 accumulators, a block's partial sums and
// the running ones), several tokens 2 rows × up to 4 tokens.
constexpr int kRowsOneToken = 4;
constexpr int kRowsTokens = 2;

// The high and the low bytes of the bf16 bits of the 128 non-negative e4m3 values, as two
// 64-byte halves each: what vpermi2b indexes with a byte's low seven bits.
struct ByteTables {
  std::array<uint8_t, 128> hi, lo;
};
const ByteTables& byte_tables() {
  static const ByteTables t = [] {
    ByteTables b{};
    for (int m = 0; m < 128; ++m) {
      const uint16_t bits = bf16::from_f32(fp8_e4m3::to_f32(static_cast<uint8_t>(m)));
      b.hi[static_cast<size_t>(m)] = static_cast<uint8_t>(bits >> 8);
      b.lo[static_cast<size_t>(m)] = static_cast<uint8_t>(bits & 0xFF);
    }
    return b;
  }();
  return t;
}

struct Tables {
  __m512i hi0, hi1, lo0, lo1;
  Tables() {
    const ByteTables& b = byte_tables();
    hi0 = _mm512_loadu_si512(b.hi.data());
    hi1 = _mm512_loadu_si512(b.hi.data() + 64);
    lo0 = _mm512_loadu_si512(b.lo.data());
    lo1 = _mm512_loadu_si512(b.lo.data() + 64);
  }
};

// 64 e4m3 bytes as bf16 in the kernel's order: a = weights 0-7, 16-23, 32-39, 48-55 of the
// chunk, b = 8-15, 24-31, 40-47, 56-63 (what the byte unpacks within 128-bit lanes yield).
inline void widen(const Tables& t, __m512i w, __m512bh& a, __m512bh& b) {
  const __m512i sign = _mm512_set1_epi8(static_cast<char>(0x80));
  __m512i hi = _mm512_permutex2var_epi8(t.hi0, w, t.hi1);
  hi = _mm512_ternarylogic_epi32(hi, w, sign, 0xF8);  // hi | (w & sign)
  const __m512i lo = _mm512_permutex2var_epi8(t.lo0, w, t.lo1);
  a = (__m512bh)_mm512_unpacklo_epi8(lo, hi);
  b = (__m512bh)_mm512_unpackhi_epi8(lo, hi);
}

// Position in a prepared chunk of the chunk's value j (the order widen gives the weights).
constexpr int64_t prepared_position(int64_t j) {
  const int64_t lane = j / 16, within = j % 16;
  return (within < 8 ? 0 : 32) + lane * 8 + within % 8;
}

// Rows [o, o + R) × M tokens: per 128-value block, the bf16 dot products into fresh sums, then
// one FMA by the block's scale into the running sums. Each row's bytes are requested kAhead
// bytes ahead into L2 (near its end, in the row R rows on).
template <int R, int M>
void dot_rows(const Fp8Bf16GemvArgs& g, const Tables& t, int64_t o, const uint16_t* x, float* y) {
  constexpr int64_t kAhead = 4096;
  const int64_t xstride = fp8_bf16_x_stride(g.k);
  __m512 run[R][M];
  for (int r = 0; r < R; ++r) {
    for (int m = 0; m < M; ++m) run[r][m] = _mm512_setzero_ps();
  }
  const uint8_t* rows[R];
  for (int r = 0; r < R; ++r) rows[r] = g.w + (o + r) * g.ldw;
  for (int64_t b0 = 0; b0 < g.k; b0 += kFp8Block) {
    const int64_t b1 = std::min(g.k, b0 + kFp8Block);
    __m512 blk[R][M];
    for (int r = 0; r < R; ++r) {
      for (int m = 0; m < M; ++m) blk[r][m] = _mm512_setzero_ps();
    }
    for (int64_t i = b0; i < b1; i += kChunk) {
      const int64_t n = std::min(kChunk, g.k - i);
      const __mmask64 keep = n == kChunk ? ~__mmask64{0} : (__mmask64{1} << n) - 1;
      for (int r = 0; r < R; ++r) {
        const int64_t ahead = i + kAhead;
        __builtin_prefetch(ahead < g.k ? rows[r] + ahead : rows[r] + R * g.ldw + (ahead - g.k), 0,
                           2);
        // Bytes past k load as 0 (bf16 +0); the prepared x is 0 there too.
        __m512bh wa, wb;
        widen(t, _mm512_maskz_loadu_epi8(keep, rows[r] + i), wa, wb);
        // x from L1 as the products' memory operands: in registers its 2·M vectors would
        // crowd out the accumulators.
        for (int m = 0; m < M; ++m) {
          const uint16_t* xm = x + m * xstride + i;
          blk[r][m] = _mm512_dpbf16_ps(blk[r][m], wa, (__m512bh)_mm512_loadu_si512(xm));
          blk[r][m] = _mm512_dpbf16_ps(blk[r][m], wb, (__m512bh)_mm512_loadu_si512(xm + 32));
        }
      }
    }
    const __m512 s = _mm512_set1_ps(g.scale_row[b0 / kFp8Block]);
    for (int r = 0; r < R; ++r) {
      for (int m = 0; m < M; ++m) run[r][m] = _mm512_fmadd_ps(blk[r][m], s, run[r][m]);
    }
  }
  for (int m = 0; m < M; ++m) {
    for (int r = 0; r < R; ++r) y[m * g.ldy + o + r] = _mm512_reduce_add_ps(run[r][m]);
  }
}

// Rows [o, o + R) for every token, kFp8GemvMaxTokens at a time: the rows' bytes come from
// DRAM for the first group and from L2 for the others (whole passes over a 128-row block of
// 18432 values per group read 0.18 of the read ceiling at 8 tokens).
template <int R>
void rows_all_tokens(const Fp8Bf16GemvArgs& g, const Tables& t, int64_t o) {
  const int64_t xstride = fp8_bf16_x_stride(g.k);
  for (int t0 = 0; t0 < g.tokens; t0 += kFp8GemvMaxTokens) {
    const uint16_t* x = g.xp + t0 * xstride;
    float* y = g.y + t0 * g.ldy;
    switch (std::min(kFp8GemvMaxTokens, g.tokens - t0)) {
      case 1:
        dot_rows<R, 1>(g, t, o, x, y);
        break;
      case 2:
        dot_rows<R, 2>(g, t, o, x, y);
        break;
      case 3:
        dot_rows<R, 3>(g, t, o, x, y);
        break;
      default:
        dot_rows<R, 4>(g, t, o, x, y);
        break;
    }
  }
}

// Rows [r0, r0 + nr): blocks of R rows, then single rows.
template <int R>
void all_rows(const Fp8Bf16GemvArgs& g, const Tables& t) {
  int64_t o = g.r0;
  for (; o + R <= g.r0 + g.nr; o += R) rows_all_tokens<R>(g, t, o);
  for (; o < g.r0 + g.nr; ++o) rows_all_tokens<1>(g, t, o);
}

}  // namespace

void fp8_prepare_x_bf16(const float* x, int64_t ldx, int tokens, int64_t k, uint16_t* xp) {
  const int64_t stride = fp8_bf16_x_stride(k);
  for (int t = 0; t < tokens; ++t) {
    const float* xt = x + t * ldx;
    uint16_t* dst = xp + t * stride;
    std::memset(dst + k / kChunk * kChunk, 0,
                static_cast<size_t>(stride - k / kChunk * kChunk) * sizeof(uint16_t));
    for (int64_t i = 0; i < k; ++i) {
      dst[i / kChunk * kChunk + prepared_position(i % kChunk)] = bf16::from_f32(xt[i]);
    }
  }
}

void fp8_gemv_bf16(const Fp8Bf16GemvArgs& g) {
  const Tables t;
  if (g.tokens == 1) {
    all_rows<kRowsOneToken>(g, t);
  } else {
    all_rows<kRowsTokens>(g, t);
  }
}

}  // namespace ctxpar::kernels::detail
