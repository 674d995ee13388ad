// The prefill GEMM's choice for bf16 weights, x packing and dispatch (linear_gemm.h).
#include "ctxpar/kernels/linear_gemm.h"

#include <algorithm>

#include "ctxpar/core/error.h"
#include "ctxpar/core/half.h"
#include "ctxpar/kernels/isa_dispatch.h"
#include "ctxpar/kernels/linear_matmul_cache.h"

namespace ctxpar::kernels::detail {

Bf16Gemm bf16_gemm(Isa isa) {
  if (isa >= Isa::kAvx512 && onednn_native_bf16()) return Bf16Gemm::kOneDnnBf16;
  if (isa == Isa::kAvx2) return Bf16Gemm::kOwnAvx2;
  return Bf16Gemm::kOneDnnSgemmOnF32Tiles;
}

std::string_view bf16_gemm_name(Bf16Gemm gemm) {
  switch (gemm) {
    case Bf16Gemm::kOneDnnBf16:
      return "onednn-bf16";
    case Bf16Gemm::kOwnAvx2:
      return "own-avx2";
    case Bf16Gemm::kOneDnnSgemmOnF32Tiles:
      break;
  }
  return "onednn-sgemm-on-f32-tiles";
}

int64_t gemm_packed_x_floats(int64_t tokens, int64_t k) {
  const int64_t panels = (tokens + kGemmTileTokens - 1) / kGemmTileTokens;
  return panels * kGemmTileTokens * k;
}

void gemm_pack_x(const float* x, int64_t ldx, int64_t tokens, int64_t k, bool round_to_bf16,
                 float* xp) {
  const int64_t panels = (tokens + kGemmTileTokens - 1) / kGemmTileTokens;
  for (int64_t k0 = 0; k0 < k; k0 += kGemmDepth) {
    const int64_t kc = std::min(kGemmDepth, k - k0);
    float* block = xp + k0 * panels * kGemmTileTokens;
    for (int64_t p = 0; p < panels; ++p) {
      float* panel = block + p * kc * kGemmTileTokens;  // [kc][kGemmTileTokens]
      for (int64_t r = 0; r < kGemmTileTokens; ++r) {
        const int64_t t = p * kGemmTileTokens + r;
        if (t >= tokens) {
          for (int64_t i = 0; i < kc; ++i) panel[i * kGemmTileTokens + r] = 0.0f;
          continue;
        }
        const float* src = x + t * ldx + k0;
        if (round_to_bf16) {
          for (int64_t i = 0; i < kc; ++i) {
            panel[i * kGemmTileTokens + r] = bf16::to_f32(bf16::from_f32(src[i]));
          }
        } else {
          for (int64_t i = 0; i < kc; ++i) panel[i * kGemmTileTokens + r] = src[i];
        }
      }
    }
  }
}

void gemm(Isa isa, const GemmArgs& a) {
  CTXPAR_CHECK(isa == Isa::kScalar || isa == Isa::kAvx2,
               "the prefill GEMM has scalar and avx2 variants, {} was asked for", isa_name(isa));
  for_isa(isa, gemm_scalar, gemm_avx2, gemm_avx2)(a);
}

}  // namespace ctxpar::kernels::detail
