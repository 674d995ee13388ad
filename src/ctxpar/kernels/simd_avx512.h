// Vec16: sixteen f32 lanes in an AVX-512 register. See simd.h. Include only in *_avx512.cc
// files. Each primitive mirrors Vec8's (simd_avx2.h) at twice the width.
#pragma once

#if !defined(__AVX512F__) || !defined(__AVX512BW__) || !defined(__AVX512DQ__)
#error "simd_avx512.h needs -mavx512f -mavx512bw -mavx512dq: include it only from *_avx512.cc"
#endif

// GCC 12's AVX-512 intrinsics build their pass-through operands from _mm512_undefined_*(),
// which -W(maybe-)uninitialized reports once inlined (GCC bug 105593, fixed in 12.3/13). The
// value is never used, so the warnings are silenced for the AVX-512 translation units only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <cstdint>

#include "ctxpar/kernels/simd.h"

namespace ctxpar::kernels::simd {

struct Vec16 {
  static constexpr int kWidth = 16;
  __m512 v;

  static Vec16 zero() { return {_mm512_setzero_ps()}; }
  static Vec16 set1(float x) { return {_mm512_set1_ps(x)}; }
  static Vec16 load(const float* p) { return {_mm512_loadu_ps(p)}; }
  void store(float* p) const { _mm512_storeu_ps(p, v); }
  // Sixteen bf16 values in natural order: zero-extend to 32 bits, shift into the high half.
  static Vec16 load_bf16(const uint16_t* p) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return {_mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))};
  }
  // Same shift / mask conversion as Vec8::load_bf16_pair over 32 bf16 values.
  static void load_bf16_pair(const uint16_t* p, Vec16& even, Vec16& odd) {
    const __m512i x = _mm512_loadu_si512(p);
    even.v = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
    odd.v = _mm512_castsi512_ps(_mm512_and_si512(x, _mm512_set1_epi32(-65536)));
  }
  // Sixteen e4m3 values in natural order, each · 2^-8 (Vec8::load_fp8's widening).
  static Vec16 load_fp8(const uint8_t* p) {
    const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return {_mm512_cvtph_ps(_mm256_and_si256(_mm256_slli_epi16(_mm256_cvtepi8_epi16(bytes), 7),
                                             _mm256_set1_epi16(static_cast<int16_t>(0xBF80))))};
  }
  // Vec8::load_fp8_pair's widening over 32 e4m3 values.
  static void load_fp8_pair(const uint8_t* p, Vec16& even, Vec16& odd) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i mask = _mm256_set1_epi16(static_cast<int16_t>(0xBF80));
    even.v = _mm512_cvtph_ps(_mm256_and_si256(_mm256_srai_epi16(_mm256_slli_epi16(w, 8), 1), mask));
    odd.v = _mm512_cvtph_ps(_mm256_and_si256(_mm256_srai_epi16(w, 1), mask));
  }

  friend Vec16 operator+(Vec16 a, Vec16 b) { return {_mm512_add_ps(a.v, b.v)}; }
  friend Vec16 operator-(Vec16 a, Vec16 b) { return {_mm512_sub_ps(a.v, b.v)}; }
  friend Vec16 operator*(Vec16 a, Vec16 b) { return {_mm512_mul_ps(a.v, b.v)}; }
  friend Vec16 operator/(Vec16 a, Vec16 b) { return {_mm512_div_ps(a.v, b.v)}; }
  friend Vec16 mul_add(Vec16 a, Vec16 b, Vec16 c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
  friend Vec16 max(Vec16 a, Vec16 b) { return {_mm512_max_ps(a.v, b.v)}; }

  friend float reduce_add(Vec16 a) { return _mm512_reduce_add_ps(a.v); }
  friend float reduce_max(Vec16 a) { return _mm512_reduce_max_ps(a.v); }
  // Fold each vector to 256 bits, then the same three horizontal adds as Vec8::reduce_add4.
  friend void reduce_add4(Vec16 a, Vec16 b, Vec16 c, Vec16 d, float* out) {
    const auto fold = [](__m512 x) {
      return _mm256_add_ps(_mm512_castps512_ps256(x), _mm512_extractf32x8_ps(x, 1));
    };
    const __m256 ab = _mm256_hadd_ps(fold(a.v), fold(b.v));
    const __m256 cd = _mm256_hadd_ps(fold(c.v), fold(d.v));
    const __m256 abcd = _mm256_hadd_ps(ab, cd);
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
  }

  // out[r·out_stride + c] = horizontal sum of argument v(4r + c), for r, c < 4: a tree of
  // 15 adds, each after two shuffles that pair what to add (128-bit lanes, then 64-bit, then
  // 32-bit elements), where four reduce_add4 calls take 12 horizontal adds and 16 folds.
  // Arguments by value: an array argument made GCC keep the caller's accumulators in memory.
  friend void reduce_add16(Vec16 v0, Vec16 v1, Vec16 v2, Vec16 v3, Vec16 v4, Vec16 v5, Vec16 v6,
                           Vec16 v7, Vec16 v8, Vec16 v9, Vec16 v10, Vec16 v11, Vec16 v12, Vec16 v13,
                           Vec16 v14, Vec16 v15, float* out, int64_t out_stride) {
    // 128-bit lanes 0 + 2 and 1 + 3 of a in the low half of the result, of b in the high half.
    const auto lanes = [](Vec16 a, Vec16 b) {
      return _mm512_add_ps(_mm512_shuffle_f32x4(a.v, b.v, 0x44),
                           _mm512_shuffle_f32x4(a.v, b.v, 0xEE));
    };
    // Of two lanes() results: 128-bit lane t holds four partial sums of the t-th of their four
    // inputs (a's two, then b's).
    const auto halves = [](__m512 a, __m512 b) {
      return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, 0x88), _mm512_shuffle_f32x4(a, b, 0xDD));
    };
    const auto pd = [](__m512 x) { return _mm512_castps_pd(x); };
    const auto pairs = [&](__m512 a, __m512 b) {
      return _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(pd(a), pd(b))),
                           _mm512_castpd_ps(_mm512_unpackhi_pd(pd(a), pd(b))));
    };
    // 128-bit lane r of e_c: partial sums of v(4r + c); lane r, element c of the last sum: all.
    const __m512 e0 = halves(lanes(v0, v4), lanes(v8, v12));
    const __m512 e1 = halves(lanes(v1, v5), lanes(v9, v13));
    const __m512 e2 = halves(lanes(v2, v6), lanes(v10, v14));
    const __m512 e3 = halves(lanes(v3, v7), lanes(v11, v15));
    const __m512 f0 = pairs(e0, e1), f1 = pairs(e2, e3);
    const __m512 sums =
        _mm512_add_ps(_mm512_shuffle_ps(f0, f1, 0x88), _mm512_shuffle_ps(f0, f1, 0xDD));
    _mm_storeu_ps(out, _mm512_castps512_ps128(sums));
    _mm_storeu_ps(out + out_stride, _mm512_extractf32x4_ps(sums, 1));
    _mm_storeu_ps(out + 2 * out_stride, _mm512_extractf32x4_ps(sums, 2));
    _mm_storeu_ps(out + 3 * out_stride, _mm512_extractf32x4_ps(sums, 3));
  }

  // As Vec8's: each 128-bit lane holds a 4 × 4 block transposed after two unpack steps; the
  // 4 × 4 arrangement of 128-bit lanes over rows g, g + 4, g + 8, g + 12 is transposed last.
  friend void transpose(Vec16 (&r)[16]) {
    __m512 t[16], u[16];
    for (int g = 0; g < 16; g += 2) {
      t[g] = _mm512_unpacklo_ps(r[g].v, r[g + 1].v);
      t[g + 1] = _mm512_unpackhi_ps(r[g].v, r[g + 1].v);
    }
    for (int g = 0; g < 16; g += 4) {
      const auto pd = [](__m512 x) { return _mm512_castps_pd(x); };
      u[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[g]), pd(t[g + 2])));
      u[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[g]), pd(t[g + 2])));
      u[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[g + 1]), pd(t[g + 3])));
      u[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[g + 1]), pd(t[g + 3])));
    }
    for (int k = 0; k < 4; ++k) {
      const __m512 v0 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x44);
      const __m512 v1 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xEE);
      const __m512 v2 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x44);
      const __m512 v3 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xEE);
      r[k].v = _mm512_shuffle_f32x4(v0, v2, 0x88);
      r[4 + k].v = _mm512_shuffle_f32x4(v0, v2, 0xDD);
      r[8 + k].v = _mm512_shuffle_f32x4(v1, v3, 0x88);
      r[12 + k].v = _mm512_shuffle_f32x4(v1, v3, 0xDD);
    }
  }

  friend Vec16 exp2(Vec16 a) {
    const __mmask16 keep = _mm512_cmp_ps_mask(a.v, _mm512_set1_ps(-126.0f), _CMP_GE_OQ);
    const __m512 x =
        _mm512_min_ps(_mm512_max_ps(a.v, _mm512_set1_ps(-126.0f)), _mm512_set1_ps(127.0f));
    const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(x, n);
    __m512 p = _mm512_set1_ps(kExp2Poly[7]);
    for (int k = 6; k >= 0; --k) p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(kExp2Poly[k]));
    const __m512i e =
        _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return {_mm512_maskz_mul_ps(keep, p, _mm512_castsi512_ps(e))};
  }
};

}  // namespace ctxpar::kernels::simd
