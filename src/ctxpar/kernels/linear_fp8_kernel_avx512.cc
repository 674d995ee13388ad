// AVX-512 variant of the FP8 loops: widened through f16 (see linear_fp8_kernel.h); up to 4
// tokens per pass (4 rows × 4 tokens of accumulators).
//
// The GEMV widens 64 bytes per load: in each 16-bit lane the odd byte becomes an f16 with one
// arithmetic shift right and a mask, the even byte with a shift left by 8 first, and four
// vcvtph2ps make the f32 vectors. That is 19 vector uops per 64 weights against 24 for
// sign-extending 16 bytes at a time, which bounded one core below its read bandwidth
// (bench/fp8: ~13 of 17 GB/s on an AVX-512 Xeon without BF16).
#include "ctxpar/kernels/linear_fp8_kernel_impl.h"
#include "ctxpar/kernels/simd_avx512.h"

namespace ctxpar::kernels::detail {
namespace {

struct F16Load {
  static constexpr float kFactor = simd::kFp8LoadFactor;
  static constexpr int kChunk = 64;
  // Measured best of 256 / 512 / 1024 / 1536 / 2048 on that Xeon (with the wrap to the next
  // row group, linear_fp8_kernel_impl.h): the hardware prefetcher alone leaves ~10% of the
  // bandwidth unused with 8 rows streaming at once.
  static constexpr int kPrefetch = 1024;

  static simd::Vec16 load(const uint8_t* p) { return simd::Vec16::load_fp8(p); }
  // out: bytes 0, 2, .., 30 | 32, .., 62 | 1, 3, .., 31 | 33, .., 63.
  static void load_chunk(const uint8_t* p, simd::Vec16* out) {
    const __m512i mask = _mm512_set1_epi16(static_cast<int16_t>(0xBF80));
    const __m512i w = _mm512_loadu_si512(p);
    const __m512i odd = _mm512_and_si512(_mm512_srai_epi16(w, 1), mask);
    const __m512i even = _mm512_and_si512(_mm512_srai_epi16(_mm512_slli_epi16(w, 8), 1), mask);
    out[0].v = _mm512_cvtph_ps(_mm512_castsi512_si256(even));
    out[1].v = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(even, 1));
    out[2].v = _mm512_cvtph_ps(_mm512_castsi512_si256(odd));
    out[3].v = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(odd, 1));
  }
  // The same lane order for 64 activations.
  static void scale_chunk(const float* x, float f, float* xs) {
    const __m512 s = _mm512_set1_ps(f);
    const __m512 a = _mm512_mul_ps(_mm512_loadu_ps(x), s);
    const __m512 b = _mm512_mul_ps(_mm512_loadu_ps(x + 16), s);
    const __m512 c = _mm512_mul_ps(_mm512_loadu_ps(x + 32), s);
    const __m512 d = _mm512_mul_ps(_mm512_loadu_ps(x + 48), s);
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd =
        _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    _mm512_storeu_ps(xs, _mm512_permutex2var_ps(a, even, b));
    _mm512_storeu_ps(xs + 16, _mm512_permutex2var_ps(c, even, d));
    _mm512_storeu_ps(xs + 32, _mm512_permutex2var_ps(a, odd, b));
    _mm512_storeu_ps(xs + 48, _mm512_permutex2var_ps(c, odd, d));
  }
};

}  // namespace

const Fp8Kernels kFp8KernelsAvx512 = make_fp8_kernels<simd::Vec16, F16Load, 8, 4, 4>();

}  // namespace ctxpar::kernels::detail
