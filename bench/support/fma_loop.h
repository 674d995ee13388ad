// Internal to fma_ceiling.cc: the multiply-add loops per ISA. Each runs `iterations` × 12
// independent vector instructions (one per accumulator) and returns a sum of the accumulators,
// so the compiler cannot drop them.
#pragma once

#include <cstdint>

namespace ctxpar::bench::detail {

inline constexpr int kFmaChains = 12;

float fma_loop_avx512(int64_t iterations);  // fma_loop_avx512.cc, 16 lanes
float fma_loop_avx2(int64_t iterations);    // fma_loop_avx2.cc, 8 lanes

// vdpbf16ps chains starting at j · kDotLoopStart, each step adding 0.75 · 2^-10 (exact in f32
// for the first few thousand steps); 32 multiply-adds per instruction. Call only where the CPU
// has AVX-512 BF16.
inline constexpr float kDotLoopStart = 1.0f / 256;
float dot_loop_avx512bf16(int64_t iterations);  // dot_loop_avx512bf16.cc

}  // namespace ctxpar::bench::detail
