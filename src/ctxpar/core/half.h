// bf16 and f16 storage types with round-to-nearest-even conversion from f32. NaN stays NaN
// (the quiet bit is set so truncation can never turn a NaN payload into an infinity).
#pragma once

#include <cstdint>
#include <cstring>

namespace ctxpar {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct bf16 {
  uint16_t bits = 0;

  bf16() = default;
  explicit bf16(float f) : bits(from_f32(f)) {}
  explicit operator float() const { return to_f32(bits); }

  static uint16_t from_f32(float f) {
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // NaN
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
    return static_cast<uint16_t>(u >> 16);
  }
  static float to_f32(uint16_t b) { return f32_from_bits(static_cast<uint32_t>(b) << 16); }
};

struct f16 {
  uint16_t bits = 0;

  f16() = default;
  explicit f16(float f) : bits(from_f32(f)) {}
  explicit operator float() const { return to_f32(bits); }

  static uint16_t from_f32(float f);
  static float to_f32(uint16_t h);
};

inline float to_float(float x) {
  return x;
}
inline float to_float(bf16 x) {
  return bf16::to_f32(x.bits);
}
inline float to_float(f16 x) {
  return f16::to_f32(x.bits);
}

template <typename T>
inline T from_float(float x);
template <>
inline float from_float<float>(float x) {
  return x;
}
template <>
inline bf16 from_float<bf16>(float x) {
  return bf16(x);
}
template <>
inline f16 from_float<f16>(float x) {
  return f16(x);
}

}  // namespace ctxpar
