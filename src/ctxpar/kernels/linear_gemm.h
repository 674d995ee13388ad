// Internal to Linear and Fp8Linear: ctxpar's own prefill GEMM, y = x · Wᵀ (+ bias), for bf16 or
// FP8 weights on CPUs without bf16 dot products where oneDNN would need W converted to a
// separate f32 copy first (AVX2).
//
// The loops are the usual packed-panel ones: W is packed per block of kGemmBlockRows rows ×
// kGemmDepth k values into column panels of 2 vectors ([kc][2·kWidth] f32, converted from bf16
// or dequantized while packing: each weight value is converted once per token chunk), x is packed
// once per chunk by the caller into panels of kGemmTileTokens tokens ([kc][6], rounded to bf16). A
// micro-kernel keeps a 6-token × 2-vector tile of y in 12 accumulators (more than the 8 a
// 4-cycle FMA at 2 per cycle needs) over kc steps: per step 2 loads of W, 6 broadcasts of x,
// 12 FMAs. One W panel (kc·64 bytes on AVX2: 16 KiB) stays in the L1 while the x panels of a
// token block stream from the L2; the W block (256 KiB) stays in the L2 for all token blocks.
//
// Numerics: products and sums in f32 (in order of k within a depth block, then block by block);
// for bf16 weights x is rounded to bf16 first, as on every bf16 path (linear.h), so the products
// are exact. FP8 weights (linear_fp8.h) come in through a dequantizer that writes f32 rows.
//
// Per-ISA variants (linear_gemm_{scalar,avx2}.cc) instantiate one template (linear_gemm_impl.h);
// the scalar one is the reference of the blocking for the tests, the AVX2 one is what runs.
#pragma once

#include <cstdint>
#include <string_view>

#include "ctxpar/core/cpu_features.h"

namespace ctxpar::kernels::detail {

// Tokens per micro-kernel tile and per packed x panel.
inline constexpr int64_t kGemmTileTokens = 6;
// k values per depth block: a W panel of 16 columns (16 KiB in f32) and an x panel (6 KiB) fit
// the L1 together.
inline constexpr int64_t kGemmDepth = 256;
// W rows packed at a time: kGemmBlockRows × kGemmDepth f32 (256 KiB) stays in the L2.
inline constexpr int64_t kGemmBlockRows = 256;
// Tokens per token block: its x panels (96 × kGemmDepth f32, 96 KiB) stay in the L2 beside the
// W block while every W panel of the block passes over them.
inline constexpr int64_t kGemmBlockTokens = 96;

// How a bf16-weight Linear runs prefill (more than kGemvMaxTokens tokens) with kernels of `isa`
// on this CPU: oneDNN's bf16 matmul where bf16 dot products are fast (onednn_native_bf16), this
// GEMM on AVX2, else oneDNN's sgemm on weight tiles converted to f32 (AVX-512 without fast bf16
// dot products: its sgemm there is faster than this GEMM would be; scalar).
enum class Bf16Gemm { kOneDnnBf16, kOwnAvx2, kOneDnnSgemmOnF32Tiles };
Bf16Gemm bf16_gemm(Isa isa);
std::string_view bf16_gemm_name(Bf16Gemm gemm);

// Floats gemm_pack_x writes for tokens × k.
int64_t gemm_packed_x_floats(int64_t tokens, int64_t k);

// x [tokens, k] f32 (row stride ldx, last dim contiguous) → xp [gemm_packed_x_floats] f32:
// every value rounded to bf16 if round_to_bf16 (else copied), laid out per depth block of
// kGemmDepth (the last one shorter), within a block per panel of kGemmTileTokens tokens as
// [kc][kGemmTileTokens] (tokens past the last one are zeros). The layout is the same for every
// ISA. Runs on the calling thread.
void gemm_pack_x(const float* x, int64_t ldx, int64_t tokens, int64_t k, bool round_to_bf16,
                 float* xp);

// Where the GEMM reads W [n, k]: bf16 rows in place (row stride ldw >= k, last dim
// contiguous), or, when bf16 is null, rows_f32, which writes W[r0 + r, k0 + i] as f32 to
// out[r·ldo + i] for r < nr, i < kc (rows counted from the first of the n rows, k0 a multiple
// of kGemmDepth; a dequantizer: FP8 blocks times their scales). rows_f32 runs on the thread
// that runs the GEMM, with ctx passed through.
struct GemmWeights {
  const uint16_t* bf16 = nullptr;
  int64_t ldw = 0;
  void (*rows_f32)(const void* ctx, int64_t r0, int64_t nr, int64_t k0, int64_t kc, float* out,
                   int64_t ldo) = nullptr;
  const void* ctx = nullptr;
};

// y[t, o] = Σ_i x[t, i]·w[o, i] (+ bias[o]) for t < tokens, o < n, with w, bias and y already
// offset to the first of the n rows. xp from gemm_pack_x for all `tokens`; y [tokens, n] f32
// (row stride ldy), overwritten; bias [n] f32 or null. Runs on the calling thread with
// thread-local scratch for the packed W block (kGemmBlockRows × kGemmDepth f32).
struct GemmArgs {
  const float* xp;
  int64_t tokens, k;
  GemmWeights w;
  int64_t n;
  const float* bias;
  float* y;
  int64_t ldy;
};
// The variant of `isa` (kScalar or kAvx2; throws for others and where the CPU lacks it).
void gemm(Isa isa, const GemmArgs& a);
void gemm_scalar(const GemmArgs& a);
void gemm_avx2(const GemmArgs& a);

}  // namespace ctxpar::kernels::detail
