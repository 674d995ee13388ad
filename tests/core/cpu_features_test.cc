#include "ctxpar/core/cpu_features.h"

#include <gtest/gtest.h>

namespace ctxpar {
namespace {

// cpu_isa() is the widest level the features allow (the benchmarks' ceilings run it); the
// kernels' active_isa() never exceeds it, whatever CTXPAR_ISA says.
TEST(CpuFeatures, CpuIsaIsTheWidestLevelTheFeaturesAllowAndBoundsTheActiveOne) {
  const CpuFeatures& f = cpu_features();
  const Isa expected = f.amx_bf16   ? Isa::kAmx
                       : f.avx512   ? Isa::kAvx512
                       : f.avx2_fma ? Isa::kAvx2
                                    : Isa::kScalar;
  EXPECT_EQ(cpu_isa(), expected) << isa_name(cpu_isa()) << " vs " << isa_name(expected);
  EXPECT_LE(active_isa(), cpu_isa()) << isa_name(active_isa());
  if (f.amx_bf16) {
    EXPECT_TRUE(f.avx512 && f.avx512_bf16);
  }
}

}  // namespace
}  // namespace ctxpar
