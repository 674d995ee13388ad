#include "ctxpar/core/cpu_features.h"

#include <cstdlib>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "ctxpar/core/error.h"

namespace ctxpar {
namespace {

// AMX-TILE and AMX-BF16 (CPUID leaf 7 EDX bits 24 and 22; GCC 12's __builtin_cpu_supports does
// not know them), and the tile data state granted: Linux enables it per process on request.
bool amx_bf16_usable() {
#if defined(__linux__) && defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) == 0) return false;
  if ((d & (1u << 24)) == 0 || (d & (1u << 22)) == 0) return false;
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = [] {
    CpuFeatures c;
#if defined(__x86_64__)
    __builtin_cpu_init();
    c.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    c.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    c.avx512_bf16 = c.avx512 && __builtin_cpu_supports("avx512bf16");
    c.avx512_vbmi = c.avx512 && __builtin_cpu_supports("avx512vbmi");
    c.amx_bf16 = c.avx512_bf16 && amx_bf16_usable();
    c.amd = __builtin_cpu_is("amd");
#endif
    return c;
  }();
  return f;
}

Isa cpu_isa() {
  const CpuFeatures& f = cpu_features();
  return f.amx_bf16 ? Isa::kAmx
         : f.avx512 ? Isa::kAvx512
                    : (f.avx2_fma ? Isa::kAvx2 : Isa::kScalar);
}

Isa active_isa() {
  static const Isa isa = [] {
    Isa best = cpu_isa();
    if (const char* env = std::getenv("CTXPAR_ISA"); env != nullptr && *env != '\0') {
      const std::string v(env);
      Isa asked;
      if (v == "scalar") {
        asked = Isa::kScalar;
      } else if (v == "avx2") {
        asked = Isa::kAvx2;
      } else if (v == "avx512") {
        asked = Isa::kAvx512;
      } else if (v == "amx") {
        asked = Isa::kAmx;
      } else {
        CTXPAR_FAIL("CTXPAR_ISA='{}' is not valid; use scalar, avx2, avx512 or amx", v);
      }
      if (asked < best) best = asked;
    }
    return best;
  }();
  return isa;
}

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
    case Isa::kAmx:
      return "amx";
  }
  return "unknown";
}

}  // namespace ctxpar
