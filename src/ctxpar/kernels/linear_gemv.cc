// The decode GEMV's dispatch (linear_gemv.h): the choice of kernel and x preparation.
#include "ctxpar/kernels/linear_gemv.h"

#include <cstring>

#include "ctxpar/core/error.h"
#include "ctxpar/core/half.h"
#include "ctxpar/kernels/isa_dispatch.h"
#include "ctxpar/kernels/linear_matmul_cache.h"

namespace ctxpar::kernels::detail {
namespace {

Isa kernel_isa(GemvKernel kernel) {
  switch (kernel) {
    case GemvKernel::kAmx:
    case GemvKernel::kAvx512Bf16:
    case GemvKernel::kAvx512:
      return Isa::kAvx512;
    case GemvKernel::kAvx2:
      return Isa::kAvx2;
    case GemvKernel::kScalar:
      break;
  }
  return Isa::kScalar;
}

// f32 lanes of the kernel's vectors (its pair step is twice that).
int kernel_width(GemvKernel kernel) {
  const Isa isa = kernel_isa(kernel);
  return isa == Isa::kAvx512 ? 16 : isa == Isa::kAvx2 ? 8 : 1;
}

}  // namespace

GemvKernel gemv_kernel(Isa isa, DType w_type, int64_t tokens) {
  switch (isa) {
    case Isa::kAmx:
      if (w_type == DType::kBF16 && tokens >= kAmxGemvMinTokens) return GemvKernel::kAmx;
      [[fallthrough]];
    case Isa::kAvx512:
      return w_type == DType::kBF16 && bf16_dot_fast() ? GemvKernel::kAvx512Bf16
                                                       : GemvKernel::kAvx512;
    case Isa::kAvx2:
      return GemvKernel::kAvx2;
    case Isa::kScalar:
      break;
  }
  return GemvKernel::kScalar;
}

bool gemv_kernel_available(GemvKernel kernel) {
  const CpuFeatures& f = cpu_features();
  switch (kernel) {
    case GemvKernel::kAmx:
      return f.amx_bf16;
    case GemvKernel::kAvx512Bf16:
      return f.avx512 && f.avx512_bf16;
    case GemvKernel::kAvx512:
      return f.avx512;
    case GemvKernel::kAvx2:
      return f.avx2_fma;
    case GemvKernel::kScalar:
      break;
  }
  return true;
}

std::string_view gemv_kernel_name(GemvKernel kernel) {
  switch (kernel) {
    case GemvKernel::kAmx:
      return "amx";
    case GemvKernel::kAvx512Bf16:
      return "avx512-bf16-dot";
    case GemvKernel::kAvx512:
      return "avx512";
    case GemvKernel::kAvx2:
      return "avx2";
    case GemvKernel::kScalar:
      break;
  }
  return "scalar";
}

void gemv_prepare_x(GemvKernel kernel, DType w_type, const float* x, int64_t ldx, int64_t tokens,
                    int64_t k, void* xp) {
  if (w_type != DType::kBF16) {
    auto* dst = static_cast<float*>(xp);
    for (int64_t t = 0; t < tokens; ++t) {
      std::memcpy(dst + t * k, x + t * ldx, static_cast<size_t>(k) * sizeof(float));
    }
    return;
  }
  if (kernel == GemvKernel::kAmx) {
    gemv_prepare_x_amx(x, ldx, tokens, k, xp);
    return;
  }
  if (kernel == GemvKernel::kAvx512Bf16) {
    auto* dst = static_cast<uint16_t*>(xp);
    for (int64_t t = 0; t < tokens; ++t) {
      for (int64_t i = 0; i < k; ++i) dst[t * k + i] = bf16::from_f32(x[t * ldx + i]);
    }
    return;
  }
  // Pair lane order (simd.h): in each full step of 2·width values the even-indexed ones come
  // first; the values of a last partial step stay where they are.
  auto* dst_all = static_cast<float*>(xp);
  const int64_t step = 2 * kernel_width(kernel);
  const int64_t full = k / step * step;
  const int64_t half = step / 2;
  for (int64_t t = 0; t < tokens; ++t) {
    const float* src = x + t * ldx;
    float* dst = dst_all + t * k;
    // A decode step prepares every linear's x: no division per value (it took 0.5% of a
    // 1-thread decode step).
    for (int64_t base = 0; base < full; base += step) {
      for (int64_t j = 0; j < half; ++j) {
        dst[base + j] = bf16::to_f32(bf16::from_f32(src[base + 2 * j]));
        dst[base + half + j] = bf16::to_f32(bf16::from_f32(src[base + 2 * j + 1]));
      }
    }
    for (int64_t i = full; i < k; ++i) dst[i] = bf16::to_f32(bf16::from_f32(src[i]));
  }
}

void gemv(GemvKernel kernel, DType w_type, const void* xp, int64_t tokens, int64_t k, const void* w,
          int64_t ldw, int64_t r0, int64_t r1, const float* bias, float* y, int64_t ldy) {
  CTXPAR_CHECK(tokens >= 1 && tokens <= kGemvMaxTokens && r0 <= r1,
               "gemv: {} tokens (valid 1..{}) over rows [{}, {})", tokens, kGemvMaxTokens, r0, r1);
  const bool bf16_w = w_type == DType::kBF16;
  CTXPAR_CHECK(bf16_w || w_type == DType::kF32, "gemv: weight dtype {} (valid: float32, bfloat16)",
               dtype_name(w_type));
  CTXPAR_CHECK(gemv_kernel_available(kernel), "gemv: kernel {} was asked for but this CPU lacks it",
               gemv_kernel_name(kernel));
  const size_t esize = bf16_w ? 2 : 4;
  const GemvArgs a{xp,
                   tokens,
                   k,
                   static_cast<const char*>(w) + static_cast<size_t>(r0 * ldw) * esize,
                   ldw,
                   r1 - r0,
                   bias != nullptr ? bias + r0 : nullptr,
                   y + r0,
                   ldy,
                   !cpu_features().amd};
  const Isa isa = kernel_isa(kernel);
  if (!bf16_w) {
    for_isa(isa, &gemv_f32_scalar, &gemv_f32_avx2, &gemv_f32_avx512)(a);
  } else if (kernel == GemvKernel::kAvx512Bf16) {
    gemv_bf16_avx512bf16(a);
  } else if (kernel == GemvKernel::kAmx) {
    gemv_bf16_amx(a);
  } else {
    for_isa(isa, &gemv_bf16_scalar, &gemv_bf16_avx2, &gemv_bf16_avx512)(a);
  }
}

void gemv_t_bf16(Isa isa, const GemvTArgs& a) {
  CTXPAR_CHECK(a.tokens >= 1 && a.tokens <= kGemvMaxTokens, "gemv_t: {} tokens (valid 1..{})",
               a.tokens, kGemvMaxTokens);
  for_isa(isa, &gemv_t_bf16_scalar, &gemv_t_bf16_avx2, &gemv_t_bf16_avx512)(a);
}

}  // namespace ctxpar::kernels::detail
