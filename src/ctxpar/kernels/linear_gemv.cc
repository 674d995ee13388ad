// The decode GEMV's dispatch (linear_gemv.h): x preparation and the choice of variant.
#include "ctxpar/kernels/linear_gemv.h"

#include "ctxpar/core/error.h"
#include "ctxpar/core/half.h"
#include "ctxpar/kernels/isa_dispatch.h"

namespace ctxpar::kernels::detail {
namespace {

int isa_width(Isa isa) {
  switch (isa) {
    case Isa::kAmx:
    case Isa::kAvx512:
      return 16;
    case Isa::kAvx2:
      return 8;
    case Isa::kScalar:
      break;
  }
  return 1;
}

}  // namespace

void gemv_prepare_x(Isa isa, DType w_type, const float* x, int64_t ldx, int64_t tokens, int64_t k,
                    float* xp) {
  if (w_type != DType::kBF16) {
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t i = 0; i < k; ++i) xp[t * k + i] = x[t * ldx + i];
    }
    return;
  }
  // Pair lane order (simd.h): in each full step of 2·width values the even-indexed ones come
  // first; the values of a last partial step stay where they are.
  const int64_t step = 2 * isa_width(isa);
  const int64_t full = k / step * step;
  for (int64_t t = 0; t < tokens; ++t) {
    const float* src = x + t * ldx;
    float* dst = xp + t * k;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t base = i / step * step, j = i - base;
      const int64_t at = i < full ? base + (j % 2) * (step / 2) + j / 2 : i;
      dst[at] = bf16::to_f32(bf16::from_f32(src[i]));
    }
  }
}

void gemv(Isa isa, DType w_type, const float* xp, int64_t tokens, int64_t k, const void* w,
          int64_t ldw, int64_t r0, int64_t r1, const float* bias, float* y, int64_t ldy) {
  CTXPAR_CHECK(tokens >= 1 && tokens <= kGemvMaxTokens && r0 <= r1,
               "gemv: {} tokens (valid 1..{}) over rows [{}, {})", tokens, kGemvMaxTokens, r0, r1);
  const bool bf16_w = w_type == DType::kBF16;
  CTXPAR_CHECK(bf16_w || w_type == DType::kF32, "gemv: weight dtype {} (valid: float32, bfloat16)",
               dtype_name(w_type));
  const size_t esize = bf16_w ? 2 : 4;
  const GemvArgs a{xp,
                   tokens,
                   k,
                   static_cast<const char*>(w) + static_cast<size_t>(r0 * ldw) * esize,
                   ldw,
                   r1 - r0,
                   bias != nullptr ? bias + r0 : nullptr,
                   y + r0,
                   ldy};
  if (bf16_w) {
    for_isa(isa, &gemv_bf16_scalar, &gemv_bf16_avx2, &gemv_bf16_avx512)(a);
  } else {
    for_isa(isa, &gemv_f32_scalar, &gemv_f32_avx2, &gemv_f32_avx512)(a);
  }
}

void gemv_t_bf16(Isa isa, const GemvTArgs& a) {
  CTXPAR_CHECK(a.tokens >= 1 && a.tokens <= kGemvMaxTokens, "gemv_t: {} tokens (valid 1..{})",
               a.tokens, kGemvMaxTokens);
  for_isa(isa, &gemv_t_bf16_scalar, &gemv_t_bf16_avx2, &gemv_t_bf16_avx512)(a);
}

}  // namespace ctxpar::kernels::detail
