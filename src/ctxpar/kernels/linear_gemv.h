// Internal to Linear: the decode GEMV, y = x · Wᵀ for a few tokens (M <= kGemvMaxTokens).
//
// Decode reads every weight once per token, so this kernel is a read loop first: one pass
// over the weight rows, 4 rows per iteration in register blocks with the tokens' x vectors
// (a step of x is loaded once per 4 rows, each weight vector once per token block), software
// prefetch gemv_prefetch_bytes() ahead in each row, bias added when the sums are stored. bf16
// weights convert with one shift or mask per vector (simd.h "pair lane order"), so x is
// prepared once per call in that order. Callers split output rows over the rank's pool.
//
// Per-ISA variants (linear_gemv_{scalar,avx2,avx512}.cc) instantiate one template
// (linear_gemv_impl.h); the tests check each against linear_reference.
#pragma once

#include <cstdint>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/dtype.h"

namespace ctxpar::kernels::detail {

// Largest token count that takes the GEMV (above it the GEMM paths are faster: each weight
// vector then feeds enough FMAs that the math, not the read, bounds the time).
inline constexpr int64_t kGemvMaxTokens = 8;
// Output rows per pool task: whole 4-row register blocks, large enough that a task streams a
// long contiguous run of the weight (64 rows of a 2048-wide bf16 W are 256 KiB).
inline constexpr int64_t kGemvRowGrain = 64;

// x [tokens, k] f32 (row stride ldx) → xp [tokens, k] (row stride k) as the `isa` variant of
// gemv reads it: for bf16 weights rounded to bf16 and in pair lane order, else copied.
void gemv_prepare_x(Isa isa, DType w_type, const float* x, int64_t ldx, int64_t tokens, int64_t k,
                    float* xp);

// y[t, o] = Σ_i xp[t, i]·w[o, i] (+ bias[o]) for t < tokens, o in [r0, r1); xp from
// gemv_prepare_x with the same isa and w_type. w [n, k] f32 or bf16 (row stride ldw, last dim
// contiguous); y [tokens, n] f32 (row stride ldy); bias [n] or null. Runs on the calling
// thread. tokens <= kGemvMaxTokens.
void gemv(Isa isa, DType w_type, const float* xp, int64_t tokens, int64_t k, const void* w,
          int64_t ldw, int64_t r0, int64_t r1, const float* bias, float* y, int64_t ldy);

// The variants behind gemv (rows [0, n) of w, y and bias already offset to the first row).
struct GemvArgs {
  const float* xp;
  int64_t tokens, k;
  const void* w;
  int64_t ldw, n;
  const float* bias;
  float* y;
  int64_t ldy;
};
void gemv_bf16_scalar(const GemvArgs& a);
void gemv_f32_scalar(const GemvArgs& a);
void gemv_bf16_avx2(const GemvArgs& a);
void gemv_f32_avx2(const GemvArgs& a);
void gemv_bf16_avx512(const GemvArgs& a);
void gemv_f32_avx512(const GemvArgs& a);

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
