// Internal to the kernels: picking one of a kernel's variants (scalar, AVX2, AVX-512, and for a
// few AMX), each compiled in its own translation unit with that ISA's flags (CMakeLists.txt).
#pragma once

#include "ctxpar/core/cpu_features.h"

namespace ctxpar::kernels::detail {

// Throws ctxpar::Error if the CPU lacks isa (CTXPAR_ISA only lowers active_isa(); an explicit
// request for a variant the CPU has is honoured, which is how tests cover every variant).
void check_isa_available(Isa isa);

// The variant for isa, once check_isa_available passed. T: a function pointer or a pointer to
// a per-ISA table. Kernels without an AMX variant run their AVX-512 one on kAmx.
template <class T>
T for_isa(Isa isa, T scalar, T avx2, T avx512, T amx) {
  check_isa_available(isa);
  switch (isa) {
    case Isa::kAmx:
      return amx;
    case Isa::kAvx512:
      return avx512;
    case Isa::kAvx2:
      return avx2;
    case Isa::kScalar:
      break;
  }
  return scalar;
}
template <class T>
T for_isa(Isa isa, T scalar, T avx2, T avx512) {
  return for_isa(isa, scalar, avx2, avx512, avx512);
}

}  // namespace ctxpar::kernels::detail
