// The compute ceiling a benchmark of f32 math (a GEMM, prefill attention) divides by: the f32
// multiply-adds per second a register-only loop of the widest FMA the CPU has reaches, 12
// independent accumulator chains (more than latency × issue rate on every CPU here, so the loop
// is bound by the FMA pipes alone), `threads` threads each pinned to its own CPU, best of 5
// passes of ~50 ms. Reported in GFLOP/s (2 per lane per FMA), over all threads.
#pragma once

#include <string>

namespace ctxpar::bench {

struct FmaCeiling {
  double gflop_per_s = 0;        // best pass, over all threads
  double worst_gflop_per_s = 0;  // slowest pass: how much the clock or the host moved
  int threads = 0;
  bool pinned = false;
  std::string loop_isa;  // "avx512", "avx2" or "scalar"
};

// Measures the ceiling now (~0.3 s).
FmaCeiling measure_fma_ceiling(int threads);

// "FMA 92.4 GFLOP/s (1 thread pinned, avx2, best of 5 passes; worst 88.0)"
std::string describe(const FmaCeiling& c);

}  // namespace ctxpar::bench
