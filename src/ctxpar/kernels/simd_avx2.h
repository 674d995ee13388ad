// Vec8: eight f32 lanes in an AVX2 register. See simd.h. Include only in *_avx2.cc files.
#pragma once

#if !defined(__AVX2__) || !defined(__FMA__)
#error "simd_avx2.h needs -mavx2 -mfma: include it only from *_avx2.cc files"
#endif

#include <immintrin.h>

#include <cstdint>

#include "ctxpar/kernels/simd.h"

namespace ctxpar::kernels::simd {

struct Vec8 {
  static constexpr int kWidth = 8;
  __m256 v;

  static Vec8 zero() { return {_mm256_setzero_ps()}; }
  static Vec8 set1(float x) { return {_mm256_set1_ps(x)}; }
  static Vec8 load(const float* p) { return {_mm256_loadu_ps(p)}; }
  void store(float* p) const { _mm256_storeu_ps(p, v); }
  // Eight bf16 values in natural order: zero-extend to 32 bits, shift into the high half.
  static Vec8 load_bf16(const uint16_t* p) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return {_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))};
  }
  // bf16 is the high half of an f32: shifting a 32-bit lane left by 16 turns its low bf16
  // (the even element, little endian) into an f32; masking off the low half does the same
  // for the odd element.
  static void load_bf16_pair(const uint16_t* p, Vec8& even, Vec8& odd) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    even.v = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
    odd.v = _mm256_castsi256_ps(_mm256_and_si256(x, _mm256_set1_epi32(-65536)));
  }
  // Eight e4m3 values in natural order, each · 2^-8: a byte sign-extended to 16 bits, shifted
  // left by 7 and masked to sign + 7 bits (0xBF80) is an f16 worth its e4m3 value · 2^-8,
  // subnormals included, which vcvtph2ps widens exactly. (e4m3's NaN encoding reads as ±480.)
  static Vec8 load_fp8(const uint8_t* p) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    return {_mm256_cvtph_ps(_mm_and_si128(_mm_slli_epi16(_mm_cvtepi8_epi16(bytes), 7),
                                          _mm_set1_epi16(static_cast<int16_t>(0xBF80))))};
  }
  // In each 16-bit lane the odd byte (the high one) shifted right by one, arithmetically, and
  // masked to sign + 7 bits (0xBF80) is an f16 worth its e4m3 value · 2^-8, subnormals
  // included; the even byte takes a shift left by 8 first. vcvtph2ps widens both exactly.
  static void load_fp8_pair(const uint8_t* p, Vec8& even, Vec8& odd) {
    const __m128i w = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i mask = _mm_set1_epi16(static_cast<int16_t>(0xBF80));
    even.v = _mm256_cvtph_ps(_mm_and_si128(_mm_srai_epi16(_mm_slli_epi16(w, 8), 1), mask));
    odd.v = _mm256_cvtph_ps(_mm_and_si128(_mm_srai_epi16(w, 1), mask));
  }

  friend Vec8 operator+(Vec8 a, Vec8 b) { return {_mm256_add_ps(a.v, b.v)}; }
  friend Vec8 operator-(Vec8 a, Vec8 b) { return {_mm256_sub_ps(a.v, b.v)}; }
  friend Vec8 operator*(Vec8 a, Vec8 b) { return {_mm256_mul_ps(a.v, b.v)}; }
  friend Vec8 operator/(Vec8 a, Vec8 b) { return {_mm256_div_ps(a.v, b.v)}; }
  friend Vec8 mul_add(Vec8 a, Vec8 b, Vec8 c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
  friend Vec8 max(Vec8 a, Vec8 b) { return {_mm256_max_ps(a.v, b.v)}; }

  friend float reduce_add(Vec8 a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  friend float reduce_max(Vec8 a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  // Three horizontal adds leave [a0123 b0123 c0123 d0123 | a4567 b4567 c4567 d4567]; adding
  // the two halves gives the four sums at the cost of about one reduce_add.
  friend void reduce_add4(Vec8 a, Vec8 b, Vec8 c, Vec8 d, float* out) {
    const __m256 ab = _mm256_hadd_ps(a.v, b.v);
    const __m256 cd = _mm256_hadd_ps(c.v, d.v);
    const __m256 abcd = _mm256_hadd_ps(ab, cd);
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
  }

  // Pairs of rows interleaved (unpack), then pairs of those as 64-bit units: each 128-bit lane
  // then holds a 4 × 4 block transposed; the two lanes of rows i and i + 4 are swapped last.
  friend void transpose(Vec8 (&r)[8]) {
    __m256 t[8], u[8];
    for (int g = 0; g < 8; g += 2) {
      t[g] = _mm256_unpacklo_ps(r[g].v, r[g + 1].v);
      t[g + 1] = _mm256_unpackhi_ps(r[g].v, r[g + 1].v);
    }
    for (int g = 0; g < 8; g += 4) {
      const auto pd = [](__m256 x) { return _mm256_castps_pd(x); };
      u[g] = _mm256_castpd_ps(_mm256_unpacklo_pd(pd(t[g]), pd(t[g + 2])));
      u[g + 1] = _mm256_castpd_ps(_mm256_unpackhi_pd(pd(t[g]), pd(t[g + 2])));
      u[g + 2] = _mm256_castpd_ps(_mm256_unpacklo_pd(pd(t[g + 1]), pd(t[g + 3])));
      u[g + 3] = _mm256_castpd_ps(_mm256_unpackhi_pd(pd(t[g + 1]), pd(t[g + 3])));
    }
    for (int k = 0; k < 4; ++k) {
      r[k].v = _mm256_permute2f128_ps(u[k], u[4 + k], 0x20);
      r[4 + k].v = _mm256_permute2f128_ps(u[k], u[4 + k], 0x31);
    }
  }

  // 2^a = 2^n · 2^f with n = round(a), f in [-0.5, 0.5]; 2^n is built in the exponent bits.
  friend Vec8 exp2(Vec8 a) {
    const __m256 underflow = _mm256_cmp_ps(a.v, _mm256_set1_ps(-126.0f), _CMP_NGE_UQ);
    const __m256 x =
        _mm256_min_ps(_mm256_max_ps(a.v, _mm256_set1_ps(-126.0f)), _mm256_set1_ps(127.0f));
    const __m256 n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 f = _mm256_sub_ps(x, n);
    __m256 p = _mm256_set1_ps(kExp2Poly[7]);
    for (int k = 6; k >= 0; --k) p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(kExp2Poly[k]));
    const __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    const __m256 r = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return {_mm256_andnot_ps(underflow, r)};
  }
};

}  // namespace ctxpar::kernels::simd
