// Internal to Linear: ctxpar's matmul kernel for bf16 weights, used where oneDNN has no bf16
// matmul (CPUs without AVX-512). It reads W in its stored bf16 form (decode is memory-bound on
// W) and blocks 4 weight rows × 3 tokens in registers; callers chunk tokens and split rows
// (linear_direct_split.h). Per core it runs within ~10% of oneDNN's sgemm on f32 W.
#pragma once

#include <cstdint>

#include "ctxpar/core/half.h"

namespace ctxpar::kernels::detail {

// y[t, o] = Σ_i x[t, i]·w[o, i] for t < tokens, o < n, accumulated in f32.
// x [tokens, k] f32 (row stride ldx), w [n, k] bf16 (row stride ldw), y [tokens, n] f32 (row
// stride ldy); last dims contiguous. Runs on the calling thread; picks the AVX2 variant when
// active_isa() allows. Keep tokens·k·4 bytes within L2 (x is re-read per 4 weight rows).
void bf16_weight_matmul(const float* x, int64_t ldx, int64_t tokens, const bf16* w, int64_t ldw,
                        int64_t k, int64_t n, float* y, int64_t ldy);

// The variants behind it (same contract).
void bf16_weight_matmul_portable(const float* x, int64_t ldx, int64_t tokens, const bf16* w,
                                 int64_t ldw, int64_t k, int64_t n, float* y, int64_t ldy);
void bf16_weight_matmul_avx2(const float* x, int64_t ldx, int64_t tokens, const bf16* w,
                             int64_t ldw, int64_t k, int64_t n, float* y, int64_t ldy);

}  // namespace ctxpar::kernels::detail
