// Which SIMD level the kernels may use, decided once at run time from the CPU (and the
// CTXPAR_ISA environment variable, which can only lower it: scalar, avx2, avx512, amx).
#pragma once

#include <string_view>

namespace ctxpar {

// kAmx is AVX-512 plus AMX tiles with bf16 dot products: kernels without an AMX variant run
// their AVX-512 one.
enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kAmx = 3 };

struct CpuFeatures {
  bool avx2_fma = false;     // AVX2 + FMA + F16C
  bool avx512 = false;       // AVX-512 F, BW, DQ, VL
  bool avx512_bf16 = false;  // vdpbf16ps
  bool avx512_vbmi = false;  // vpermi2b, vpermb
  // AMX-TILE + AMX-BF16 with AVX-512 BF16, and the kernel granted this process the tile data
  // state (Linux arch_prctl ARCH_REQ_XCOMP_PERM, requested once here).
  bool amx_bf16 = false;
  // An AMD core (vendor AuthenticAMD): for kernels whose best software prefetch differs by
  // vendor.
  bool amd = false;
};

const CpuFeatures& cpu_features();
// Highest ISA the CPU supports, CTXPAR_ISA aside: what the machine can do (the benchmarks'
// ceilings), not what the kernels may use.
Isa cpu_isa();
// Highest ISA both supported by the CPU and allowed by CTXPAR_ISA.
Isa active_isa();
std::string_view isa_name(Isa isa);

}  // namespace ctxpar
