// A small SIMD vector abstraction for kernels written once and instantiated per ISA.
//
// A kernel is a template over a vector type V; each ISA translation unit instantiates it with
// the vector type its compile flags allow:
//   Vec1  (simd_scalar.h) — one float, baseline x86-64, in files without an ISA suffix;
//   Vec8  (simd_avx2.h)   — __m256, only in *_avx2.cc files (compiled -mavx2 -mfma -mf16c);
//   Vec16 (simd_avx512.h) — __m512, only in *_avx512.cc files.
// Because every variant runs the same template, a wider variant is correct by construction
// once the narrow ones are tested; only the few primitives below differ per type.
//
// Every V provides (a, b, c: V; p: pointer; x: float):
//   V::kWidth                        lanes
//   V::zero(), V::set1(x)
//   V::load(const float* p), v.store(float* p)          unaligned
//   V::load_bf16_pair(const uint16_t* p, V& even, V& odd)
//       reads 2·kWidth bf16 values; element 2i goes to even[i], 2i+1 to odd[i]. This is the
//       cheap bf16→f32 conversion (one shift, one mask), at the price of de-interleaving the
//       elements: kernels keep the other operand in the same "pair lane order" (see below).
//   V::load_fp8_pair(const uint8_t* p, V& even, V& odd)
//       reads 2·kWidth e4m3 values (core/fp8.h) in the same pair lane order, each as its value
//       times kFp8LoadFactor: the SIMD widening (a byte shifted into an f16, then vcvtph2ps)
//       yields value · 2^-8, and every V yields the same so kernels fold one factor. e4m3's
//       NaN encoding reads as ±480 · 2^-8 in the SIMD variants (only NaN inputs store it).
//   a + b, a - b, a * b, a / b, mul_add(a, b, c) = a·b + c (fused where the ISA has FMA)
//   max(a, b), reduce_add(a), reduce_max(a)
//   reduce_add4(a, b, c, d, float* out)   out[0..3] = horizontal sums of a, b, c, d
//   reduce_add16(v0, ..., v15, float* out, int64_t stride)   Vec16 only (kernels test for it
//                                    with a requires clause): out[r·stride + c] = horizontal
//                                    sum of v(4r + c), r, c < 4
//   transpose(V (&r)[kWidth])        the kWidth × kWidth block in place: r[i].lane(j) ↔
//                                     r[j].lane(i)
//   exp2(a)                          2^a for a <= 127; a < -126, -inf and NaN give exactly 0
//
// Pair lane order: a row of d values is cut into pair steps of 2·kWidth values; in a step the
// even-indexed values come first, then the odd-indexed ones. For f32 data the kernels use the
// natural order instead (two plain loads). Values past the last full pair step keep their
// natural position.
//
// ODR note: these headers define inline functions whose code depends on the compile flags, so
// include each one only in translation units built with the matching flags.
#pragma once

#include <cstdint>

namespace ctxpar::kernels::simd {

// What V::load_fp8_pair yields per e4m3 value: value · kFp8LoadFactor.
inline constexpr float kFp8LoadFactor = 0x1.0p-8f;

// Taylor coefficients of 2^f = e^(f·ln2) on f in [-0.5, 0.5]: c_k = ln2^k / k!. Degree 7
// bounds the truncation error by (0.5·ln2)^8 / 8! ≈ 5e-9, below float rounding.
inline constexpr float kExp2Poly[8] = {1.0f,
                                       0.693147180559945309f,
                                       0.240226506959100712f,
                                       0.0555041086648215800f,
                                       0.00961812910762847717f,
                                       0.00133335581464284434f,
                                       0.000154035303933816099f,
                                       0.0000152527338040598403f};

}  // namespace ctxpar::kernels::simd
