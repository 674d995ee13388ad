// AVX2 variant of the FP8 loops: 8 weights per vector, widened through f16 (see
// linear_fp8_kernel.h); up to 2 tokens per pass keep 4 rows × 2 tokens of accumulators in the
// 16 ymm registers.
#include "ctxpar/kernels/linear_fp8_kernel_impl.h"
#include "ctxpar/kernels/simd_avx2.h"

namespace ctxpar::kernels::detail {
namespace {

struct F16Load {
  static constexpr float kFactor = 0x1.0p-8f;
  static simd::Vec8 load(const uint8_t* p) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    const __m128i h = _mm_and_si128(_mm_slli_epi16(_mm_cvtepi8_epi16(bytes), 7),
                                    _mm_set1_epi16(static_cast<int16_t>(0xBF80)));
    return {_mm256_cvtph_ps(h)};
  }
};

}  // namespace

const Fp8Kernels kFp8KernelsAvx2 =
    make_fp8_kernels<simd::Vec8, NaturalOrder<simd::Vec8, F16Load>, 4, 4, 2>();

}  // namespace ctxpar::kernels::detail
