// AVX-512 variant of the FP8 loops: 16 weights per vector, widened through f16 (see
// linear_fp8_kernel.h); up to 4 tokens per pass (4 rows × 4 tokens of accumulators).
#include "ctxpar/kernels/linear_fp8_kernel_impl.h"
#include "ctxpar/kernels/simd_avx512.h"

namespace ctxpar::kernels::detail {
namespace {

struct F16Load {
  static constexpr float kFactor = 0x1.0p-8f;
  static simd::Vec16 load(const uint8_t* p) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m256i h = _mm256_and_si256(_mm256_slli_epi16(_mm256_cvtepi8_epi16(bytes), 7),
                                       _mm256_set1_epi16(static_cast<int16_t>(0xBF80)));
    return {_mm512_cvtph_ps(h)};
  }
};

}  // namespace

const Fp8Kernels kFp8KernelsAvx512 = make_fp8_kernels<simd::Vec16, F16Load, 8, 4, 4>();

}  // namespace ctxpar::kernels::detail
