#include "ctxpar/kernels/isa_dispatch.h"

#include "ctxpar/core/error.h"

namespace ctxpar::kernels::detail {

void check_isa_available(Isa isa) {
  const CpuFeatures& f = cpu_features();
  const bool ok = isa == Isa::kScalar || (isa == Isa::kAvx2 && f.avx2_fma) ||
                  (isa == Isa::kAvx512 && f.avx512) || (isa == Isa::kAmx && f.amx_bf16);
  CTXPAR_CHECK(ok,
               "ISA {} was asked for but this CPU lacks it (avx2+fma: {}, avx512: {}, amx-bf16 "
               "granted: {})",
               isa_name(isa), f.avx2_fma, f.avx512, f.amx_bf16);
}

}  // namespace ctxpar::kernels::detail
