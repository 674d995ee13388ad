// The compute ceilings a benchmark of matrix math (a GEMM, prefill attention) divides by: the
// multiply-adds per second a register-only loop of one instruction reaches, 12 independent
// accumulator chains (more than latency × issue rate on every CPU here, so the loop is bound by
// the pipes alone), `threads` threads each pinned to its own CPU, best of 5 passes of ~50 ms.
// Two instructions: the widest f32 FMA the CPU has (f32 math), and AVX-512 BF16's vdpbf16ps
// (bf16 matmuls where the CPU has it; AMX tiles, where present, go beyond both). Reported in
// GFLOP/s (2 per multiply-add), over all threads.
#pragma once

#include <string>

#include "ctxpar/core/cpu_features.h"

namespace ctxpar::bench {

struct FmaCeiling {
  const char* instruction = "FMA";  // "FMA" or "bf16 dot"
  double gflop_per_s = 0;           // best pass, over all threads; 0 where the CPU lacks it
  double worst_gflop_per_s = 0;     // slowest pass: how much the clock or the host moved
  int threads = 0;
  bool pinned = false;
  std::string loop_isa;  // "avx512", "avx2", "scalar"; "avx512bf16" or "none" for bf16 dot
};

// Measures the f32 FMA ceiling now (~0.3 s), of the widest FMA up to `at_most` (Isa::kAvx2:
// what a CPU without AVX-512 would reach, e.g. beside engines held to AVX2).
FmaCeiling measure_fma_ceiling(int threads, Isa at_most = Isa::kAmx);

// Measures vdpbf16ps's ceiling now (~0.3 s; on Zen 4 it does twice the FMA's
// multiply-adds); gflop_per_s 0 and loop_isa "none" without AVX-512 BF16.
FmaCeiling measure_bf16_dot_ceiling(int threads);

// "FMA 92.4 GFLOP/s (1 thread pinned, avx2, best of 5 passes; worst 88.0)"
std::string describe(const FmaCeiling& c);

}  // namespace ctxpar::bench
