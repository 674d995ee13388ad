// Vec1: the one-lane vector of the scalar (baseline x86-64) kernel variants. See simd.h.
// Include only in translation units without ISA flags.
#pragma once

#include <cmath>
#include <cstdint>

#include "ctxpar/core/fp8.h"
#include "ctxpar/core/half.h"
#include "ctxpar/kernels/simd.h"

namespace ctxpar::kernels::simd {

struct Vec1 {
  static constexpr int kWidth = 1;
  float v;

  static Vec1 zero() { return {0.0f}; }
  static Vec1 set1(float x) { return {x}; }
  static Vec1 load(const float* p) { return {*p}; }
  void store(float* p) const { *p = v; }
  static Vec1 load_bf16(const uint16_t* p) { return {bf16::to_f32(*p)}; }
  static void load_bf16_pair(const uint16_t* p, Vec1& even, Vec1& odd) {
    even.v = bf16::to_f32(p[0]);
    odd.v = bf16::to_f32(p[1]);
  }
  static void load_fp8_pair(const uint8_t* p, Vec1& even, Vec1& odd) {
    even.v = fp8_e4m3::to_f32(p[0]) * kFp8LoadFactor;
    odd.v = fp8_e4m3::to_f32(p[1]) * kFp8LoadFactor;
  }

  friend Vec1 operator+(Vec1 a, Vec1 b) { return {a.v + b.v}; }
  friend Vec1 operator-(Vec1 a, Vec1 b) { return {a.v - b.v}; }
  friend Vec1 operator*(Vec1 a, Vec1 b) { return {a.v * b.v}; }
  friend Vec1 operator/(Vec1 a, Vec1 b) { return {a.v / b.v}; }
  // Not std::fma: without hardware FMA that is a slow library call.
  friend Vec1 mul_add(Vec1 a, Vec1 b, Vec1 c) { return {a.v * b.v + c.v}; }
  friend Vec1 max(Vec1 a, Vec1 b) { return {a.v > b.v ? a.v : b.v}; }
  friend float reduce_add(Vec1 a) { return a.v; }
  friend float reduce_max(Vec1 a) { return a.v; }
  friend void reduce_add4(Vec1 a, Vec1 b, Vec1 c, Vec1 d, float* out) {
    out[0] = a.v;
    out[1] = b.v;
    out[2] = c.v;
    out[3] = d.v;
  }
  friend void transpose(Vec1 (&)[1]) {}
  friend Vec1 exp2(Vec1 a) { return {a.v >= -126.0f ? std::exp2(a.v) : 0.0f}; }
};

}  // namespace ctxpar::kernels::simd
