// Internal to Linear: the decode GEMV, y = x · Wᵀ for a few tokens (M <= kGemvMaxTokens).
//
// Decode reads every weight once per token, so this kernel is a read loop first: one pass over the
// weight rows, 8 (AVX-512) or 4 rows per iteration in register blocks with the tokens' x vectors (a
// step of x is loaded once per block, each weight vector once per token block), each register row
// walking its own contiguous run of rows (a sequential stream), software prefetch
// gemv_prefetch_bytes() ahead in each row, bias added when the sums are stored. bf16 weights either
// convert with one shift or mask per vector (simd.h "pair lane order"), or, where AVX-512 BF16 dot
// products are fast, feed vdpbf16ps as loaded (that kernel takes one row at a time for a single
// token: one sequential stream); x is prepared once per call in the layout the kernel reads.
// One token over bf16 weights on AVX-512 or AVX2 (batch-1 decode) takes a kernel of its own: two
// (Intel) or four (AMD) streams of four lines per step prefetched into L1, sums stored past the
// caches (gemv_bf16_one_token, linear_gemv_impl.h). Callers split output rows over the rank's
// pool.
//
// Per-ISA variants (linear_gemv_{scalar,avx2,avx512}.cc) instantiate one template
// (linear_gemv_impl.h), the dot-product one is linear_gemv_avx512bf16.cc, the tile-unit one
// linear_gemv_amx.cc; the tests check each against linear_reference.
#pragma once

#include <cstdint>
#include <string_view>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/dtype.h"

namespace ctxpar::kernels::detail {

// Largest token count that takes the GEMV (above it the GEMM paths are faster: each weight
// vector then feeds enough FMAs that the math, not the read, bounds the time).
inline constexpr int64_t kGemvMaxTokens = 8;
// Pool tasks span multiples of this many output rows, so a task splits evenly into the FMA
// kernels' 4 or 8 row streams (rows left over go one at a time); the AMX kernel's 16 streams
// leave at most a shorter tile.
inline constexpr int64_t kGemvRowBlock = 8;
// Output rows per pool task at least: a long contiguous run of the weight (64 rows of a
// 2048-wide bf16 W are 256 KiB).
inline constexpr int64_t kGemvRowGrain = 64;

// One GEMV implementation. kAvx512Bf16 reads bf16 weights with vdpbf16ps, kAmx with the tile
// unit (f32 weights take the kAvx512 path under either).
enum class GemvKernel { kScalar, kAvx2, kAvx512, kAvx512Bf16, kAmx };

// From this many tokens bf16 weights take the tile unit at Isa::kAmx: one tile product per
// KiB of weights whatever the token count, where the FMA kernels need a second register pass
// (kernels_linear_bench DecodeLinears, an AMX Xeon VM, of the read ceiling, 1 / 2 threads:
// 8 tokens 0.83-0.86 / 0.83-0.85 against 0.64-0.66 / 0.59-0.61; 4 tokens 0.89-0.90 /
// 0.86-0.88 against 0.86-0.90 / 0.86-0.87, a draw).
inline constexpr int64_t kAmxGemvMinTokens = 5;

// The kernel for `tokens` tokens over weights of w_type at isa (at most active_isa()) on this
// CPU: kAmx for bf16 weights at Isa::kAmx from kAmxGemvMinTokens tokens, kAvx512Bf16 for bf16
// weights where the CPU has AVX-512 BF16 and its dot products are fast (bf16_dot_fast,
// linear_matmul_cache.h), else the isa's shift/mask or f32 kernel.
GemvKernel gemv_kernel(Isa isa, DType w_type, int64_t tokens);
// Whether this CPU can run `kernel` (tests iterate over these).
bool gemv_kernel_available(GemvKernel kernel);
std::string_view gemv_kernel_name(GemvKernel kernel);

// x [tokens, k] f32 (row stride ldx) → xp (tokens·k·4 bytes, 4-byte aligned, row stride k
// values) as `kernel` reads it: for bf16 weights rounded to bf16, stored as f32 in pair lane
// order, (kAvx512Bf16) as bf16 in natural order, or (kAmx) as bf16 tiles of 32 values × tokens
// in pair order followed by the last k % 32 values as f32; for f32 weights copied.
void gemv_prepare_x(GemvKernel kernel, DType w_type, const float* x, int64_t ldx, int64_t tokens,
                    int64_t k, void* xp);

// y[t, o] = Σ_i x[t, i]·w[o, i] (+ bias[o]) for t < tokens, o in [r0, r1); xp from
// gemv_prepare_x with the same kernel and w_type. w [n, k] f32 or bf16 (row stride ldw, last
// dim contiguous); y [tokens, n] f32 (row stride ldy); bias [n] or null. Runs on the calling
// thread. tokens <= kGemvMaxTokens. Throws if the CPU cannot run `kernel`.
void gemv(GemvKernel kernel, DType w_type, const void* xp, int64_t tokens, int64_t k, const void* w,
          int64_t ldw, int64_t r0, int64_t r1, const float* bias, float* y, int64_t ldy);

// The variants behind gemv (rows [0, n) of w, y and bias already offset to the first row).
struct GemvArgs {
  const void* xp;  // as gemv_prepare_x wrote it for the variant's kernel
  int64_t tokens, k;
  const void* w;
  int64_t ldw, n;
  const float* bias;
  float* y;
  int64_t ldy;
  // The access pattern measured best on each vendor's cores. true (gemv sets it on Intel cores):
  // kAvx512Bf16's one token reads the rows in order as one stream, each requested 6 KiB ahead
  // into L1, several tokens request 1 KiB ahead into L1; the shift/mask kernels' one token reads
  // two streams, 512 bytes ahead into L1, several tokens request bf16 rows 512 bytes ahead into
  // L2. false (AMD cores): kAvx512Bf16's one token reads the range's two halves of rows side by
  // side as two streams with no requests, several tokens request 4 KiB ahead into L2; the
  // shift/mask kernels' one token reads four streams, 256 bytes ahead into L1, several tokens
  // request bf16 rows 2 KiB ahead into L2. kAvx512Bf16's results are the same bits either way;
  // the shift/mask kernels' one token's are not (their accumulator counts differ).
  bool intel_pattern = true;
};
void gemv_bf16_scalar(const GemvArgs& a);
void gemv_f32_scalar(const GemvArgs& a);
void gemv_bf16_avx2(const GemvArgs& a);
void gemv_f32_avx2(const GemvArgs& a);
void gemv_bf16_avx512(const GemvArgs& a);
void gemv_f32_avx512(const GemvArgs& a);
void gemv_bf16_avx512bf16(const GemvArgs& a);
void gemv_bf16_amx(const GemvArgs& a);
void gemv_prepare_x_amx(const float* x, int64_t ldx, int64_t tokens, int64_t k, void* xp);

// The transposed GEMV, y = x · W for W [k, n] stored with rows of n contiguous (MLA's absorbed
// W_UK is read this way in place): y[t, c] = Σ_i xr[t, i]·w[i, c] for t < tokens, c < n, where
// xr [tokens, k] (row stride k) is x rounded to bf16 (natural order) and w [k, n] bf16 (row
// stride ldw); y [tokens, n] f32 (row stride ldy) is overwritten. Streams w once, 16 rows at a
// time, every column tile of those rows with its accumulators kept in registers and parked in
// y between row blocks. Runs on the calling thread; tokens <= kGemvMaxTokens.
struct GemvTArgs {
  const float* xr;
  int64_t tokens, k;
  const uint16_t* w;
  int64_t ldw, n;
  float* y;
  int64_t ldy;
};
void gemv_t_bf16(Isa isa, const GemvTArgs& a);
void gemv_t_bf16_scalar(const GemvTArgs& a);
void gemv_t_bf16_avx2(const GemvTArgs& a);
void gemv_t_bf16_avx512(const GemvTArgs& a);

}  // namespace ctxpar::kernels::detail
