// Internal to Int8Linear: ctxpar's exact int8 matmul kernel, used on CPUs where oneDNN's int8
// matmul is not exact. (Without VNNI, oneDNN multiplies with vpmaddubsw, whose 16-bit pair
// sums saturate for full-range int8 operands; this kernel widens to 16 bits and uses
// vpmaddwd, which cannot overflow.)
#pragma once

#include <cstdint>

namespace ctxpar::kernels::detail {

// y[t, o] = float(Σ_i q[t, i]·w[o, i]) · column_scale[o] for t < tokens, o < n; the sum is
// exact in int32 (k < 2^17). q [tokens, k] int8 (row stride ldq), w [n, k] int8 (row stride
// ldw), y [tokens, n] f32 (row stride ldy). Runs on the calling thread; picks the AVX2
// variant when active_isa() allows. Blocks 4 weight rows × 3 tokens in registers; callers chunk
// tokens and split rows (linear_direct_split.h).
void int8_weight_matmul(const int8_t* q, int64_t ldq, int64_t tokens, const int8_t* w, int64_t ldw,
                        int64_t k, int64_t n, const float* column_scale, float* y, int64_t ldy);

void int8_weight_matmul_portable(const int8_t* q, int64_t ldq, int64_t tokens, const int8_t* w,
                                 int64_t ldw, int64_t k, int64_t n, const float* column_scale,
                                 float* y, int64_t ldy);
void int8_weight_matmul_avx2(const int8_t* q, int64_t ldq, int64_t tokens, const int8_t* w,
                             int64_t ldw, int64_t k, int64_t n, const float* column_scale, float* y,
                             int64_t ldy);

}  // namespace ctxpar::kernels::detail
