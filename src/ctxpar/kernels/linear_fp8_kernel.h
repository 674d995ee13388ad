// Internal to Fp8Linear: the per-ISA loops over block-scaled FP8 weights (e4m3 bytes W [n, k],
// row stride ldw; scale S [ceil(n/128), ceil(k/128)] f32, row stride lds), one table per ISA
// (linear_fp8_kernel_{scalar,avx2,avx512}.cc, all from linear_fp8_kernel_impl.h).
//
// The SIMD variants widen e4m3 to f32 with bit tricks (simd::Vec8 / Vec16::load_fp8): a
// sign-extended byte shifted left by 7 and masked (0xBF80) is an IEEE f16 whose value is the
// e4m3 value times 2^-8 (subnormals included), which vcvtph2ps turns into f32. The missing 2^8
// is folded into the activation scale. (e4m3's NaN encoding S.1111.111 reads as ±480 this way;
// checkpoints never hold it.) The scalar variant reads a 256-entry table of exact values.
#pragma once

#include <cstdint>

#include "ctxpar/core/cpu_features.h"

namespace ctxpar::kernels::detail {

inline constexpr int64_t kFp8Block = 128;
// Decode GEMV handles up to this many tokens per pass over the weight rows.
inline constexpr int kFp8GemvMaxTokens = 4;

struct Fp8Kernels {
  // What the weight loads of this variant yield: e4m3 value · weight_factor (2^-8 for the
  // SIMD variants, 1 for the scalar one).
  float weight_factor;
  // xs [tokens, k] (row stride k) = x [tokens, k] (row stride ldx) · S_row[i / 128] /
  // weight_factor, where S_row is one row block's scales [ceil(k / 128)], laid out in the
  // order this variant's gemv reads it: the SIMD variants widen C weight bytes at a time (64
  // for AVX-512, 32 for AVX2) as even and odd bytes, so each whole C-value run holds value j
  // at (j % 2)·C/2 + j / 2; the scalar variant and every tail shorter than a run keep the
  // natural order.
  void (*scale_x)(const float* x, int64_t ldx, int tokens, int64_t k, const float* scale_row,
                  float* xs);
  // Rows [r0, r0 + nr) of one 128-row block (r0 / 128 == (r0 + nr - 1) / 128):
  //   y[t, o] = Σ_i x[t, i]·S[o / 128, i / 128]·e4m3(W[o, i])   for t < tokens <= 4
  // with xs from scale_x of that row block. One pass over the rows, several rows per
  // iteration with every token's accumulators in registers. y [tokens, ·] row stride ldy;
  // writes y[t, r0 .. r0 + nr).
  void (*gemv)(const float* xs, int64_t ldxs, int tokens, const uint8_t* w, int64_t ldw, int64_t k,
               int64_t r0, int64_t nr, float* y, int64_t ldy);
  // out[r, i] = e4m3(W[r0 + r, i])·S[(r0 + r) / 128, i / 128] for r < nr, i < k (out row
  // stride ldo): the prefill path's dequantized tile.
  void (*dequantize)(const uint8_t* w, int64_t ldw, const float* scale, int64_t lds, int64_t k,
                     int64_t r0, int64_t nr, float* out, int64_t ldo);
};

// FP8 weights times 2 to kFp8AmxMaxTokens tokens on the AMX tile unit (linear_fp8_amx.cc), for
// bf16 activations: y[t, o] = Σ_i bf16(x[t, i])·e4m3(W[o, i])·S[o / 128, i / 128] for rows
// o in [r0, r0 + nr), r0 a multiple of 128. xp: x as gemv_prepare_x_amx prepares it (bf16
// tiles of 32 values × tokens, then the last k % 32 values as f32). scale: S with row stride
// lds (lds 0: one row of scales for every row block). Writes y[t, r0 .. r0 + nr) (row stride
// ldy). Runs on the calling thread; needs Isa::kAmx.
inline constexpr int kFp8AmxMaxTokens = 32;
struct Fp8AmxArgs {
  const void* xp;
  int64_t tokens, k;
  const uint8_t* w;
  int64_t ldw;
  const float* scale;
  int64_t lds;
  int64_t r0, nr;
  float* y;
  int64_t ldy;
};
void fp8_gemm_amx(const Fp8AmxArgs& a);

// FP8 weights times any number of tokens (in passes of kFp8GemvMaxTokens; Fp8Linear sends up to
// 16) with AVX-512 BF16 dot products (linear_fp8_avx512vbmi.cc),
// for bf16 activations: y[t, o] = Σ_b S[o / 128, b]·Σ_{i in block b} bf16(x[t, i])·e4m3(W[o, i])
// for rows o in [r0, r0 + nr) of one 128-row block. xp: x as fp8_prepare_x_bf16 writes it.
// scale_row: that row block's scales [ceil(k / 128)]. Writes y[t, r0 .. r0 + nr) (row stride
// ldy). Runs on the calling thread; needs fp8_gemv_bf16_usable().
struct Fp8Bf16GemvArgs {
  const uint16_t* xp;
  int tokens;
  int64_t k;
  const uint8_t* w;
  int64_t ldw;
  const float* scale_row;
  int64_t r0, nr;
  float* y;
  int64_t ldy;
};
void fp8_gemv_bf16(const Fp8Bf16GemvArgs& a);
// Values per token of a prepared x: k rounded up to the kernel's 64-value chunk.
constexpr int64_t fp8_bf16_x_stride(int64_t k) {
  return (k + 63) / 64 * 64;
}
// xp [tokens, fp8_bf16_x_stride(k)] = x [tokens, k] (row stride ldx) rounded to bf16, each
// 64-value chunk in the kernel's lane order, zeros past k. xp is the caller's.
void fp8_prepare_x_bf16(const float* x, int64_t ldx, int tokens, int64_t k, uint16_t* xp);
// The CPU has AVX-512 BF16 and VBMI (vpermi2b) and CTXPAR_ISA allows AVX-512.
bool fp8_gemv_bf16_usable();

// Throws ctxpar::Error if the CPU lacks isa.
const Fp8Kernels& fp8_kernels(Isa isa);

extern const Fp8Kernels kFp8KernelsScalar;
extern const Fp8Kernels kFp8KernelsAvx2;
extern const Fp8Kernels kFp8KernelsAvx512;

// The 256 exact e4m3 values (NaN for 0x7F / 0xFF).
const float* e4m3_table();

}  // namespace ctxpar::kernels::detail
