// Internal to fma_ceiling.cc: the FMA loops per ISA. Each runs `iterations` × 12 independent
// vector FMAs (one per accumulator) and returns a sum of the accumulators, so the compiler
// cannot drop them; fma_lanes_* is the vector width in f32 lanes.
#pragma once

#include <cstdint>

namespace ctxpar::bench::detail {

inline constexpr int kFmaChains = 12;

float fma_loop_avx512(int64_t iterations);  // fma_loop_avx512.cc, 16 lanes
float fma_loop_avx2(int64_t iterations);    // fma_loop_avx2.cc, 8 lanes

}  // namespace ctxpar::bench::detail
