// AVX2 variant of the FP8 loops: widened through f16 (see linear_fp8_kernel.h); up to 2 tokens
// per pass keep 4 rows × 2 tokens of accumulators in the 16 ymm registers.
//
// The GEMV widens 32 bytes per load as the AVX-512 variant does 64 (odd bytes: an arithmetic
// shift right and a mask make f16, even bytes: a shift left by 8 first; then vcvtph2ps), and
// prefetches ahead in each row: sign-extending 8 bytes at a time without prefetch read at
// ~0.6 of the read bandwidth (bench/fp8, CTXPAR_ISA=avx2 on an AVX-512 Xeon).
#include "ctxpar/kernels/linear_fp8_kernel_impl.h"
#include "ctxpar/kernels/simd_avx2.h"

namespace ctxpar::kernels::detail {
namespace {

struct F16Load {
  static constexpr float kFactor = simd::kFp8LoadFactor;
  static constexpr int kChunk = 32;
  static constexpr int kPrefetch = 1024;

  static simd::Vec8 load(const uint8_t* p) { return simd::Vec8::load_fp8(p); }
  // out: bytes 0, 2, .., 14 | 16, .., 30 | 1, 3, .., 15 | 17, .., 31.
  static void load_chunk(const uint8_t* p, simd::Vec8* out) {
    const __m256i mask = _mm256_set1_epi16(static_cast<int16_t>(0xBF80));
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i odd = _mm256_and_si256(_mm256_srai_epi16(w, 1), mask);
    const __m256i even = _mm256_and_si256(_mm256_srai_epi16(_mm256_slli_epi16(w, 8), 1), mask);
    out[0].v = _mm256_cvtph_ps(_mm256_castsi256_si128(even));
    out[1].v = _mm256_cvtph_ps(_mm256_extracti128_si256(even, 1));
    out[2].v = _mm256_cvtph_ps(_mm256_castsi256_si128(odd));
    out[3].v = _mm256_cvtph_ps(_mm256_extracti128_si256(odd, 1));
  }
  // The same lane order for 32 activations.
  static void scale_chunk(const float* x, float f, float* xs) {
    const __m256 s = _mm256_set1_ps(f);
    const auto split = [&](const float* p, float* even, float* odd) {
      const __m256 a = _mm256_mul_ps(_mm256_loadu_ps(p), s);
      const __m256 b = _mm256_mul_ps(_mm256_loadu_ps(p + 8), s);
      // shuffle_ps picks within 128-bit halves: [a0 a2 b0 b2 | a4 a6 b4 b6]; the 64-bit
      // permute puts the halves' pairs in order.
      const __m256 e = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
      const __m256 o = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
      _mm256_storeu_ps(even, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(e), 0xD8)));
      _mm256_storeu_ps(odd, _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(o), 0xD8)));
    };
    split(x, xs, xs + 16);
    split(x + 16, xs + 8, xs + 24);
  }
};

}  // namespace

const Fp8Kernels kFp8KernelsAvx2 = make_fp8_kernels<simd::Vec8, F16Load, 4, 4, 2>();

}  // namespace ctxpar::kernels::detail
