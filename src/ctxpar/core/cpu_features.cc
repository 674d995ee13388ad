#include "ctxpar/core/cpu_features.h"

#include <cstdlib>
#include <string>

#include "ctxpar/core/error.h"

namespace ctxpar {

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = [] {
    CpuFeatures c;
#if defined(__x86_64__)
    __builtin_cpu_init();
    c.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    c.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    c.avx512_bf16 = c.avx512 && __builtin_cpu_supports("avx512bf16");
#endif
    return c;
  }();
  return f;
}

Isa active_isa() {
  static const Isa isa = [] {
    const CpuFeatures& f = cpu_features();
    Isa best = f.avx512 ? Isa::kAvx512 : (f.avx2_fma ? Isa::kAvx2 : Isa::kScalar);
    if (const char* env = std::getenv("CTXPAR_ISA"); env != nullptr && *env != '\0') {
      const std::string v(env);
      Isa asked;
      if (v == "scalar") {
        asked = Isa::kScalar;
      } else if (v == "avx2") {
        asked = Isa::kAvx2;
      } else if (v == "avx512") {
        asked = Isa::kAvx512;
      } else {
        CTXPAR_FAIL("CTXPAR_ISA='{}' is not valid; use scalar, avx2 or avx512", v);
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
  }
  return "unknown";
}

}  // namespace ctxpar
