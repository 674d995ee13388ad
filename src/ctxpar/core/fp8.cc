#include "ctxpar/core/fp8.h"

#include <cmath>
#include <limits>

#include "ctxpar/core/half.h"

namespace ctxpar {

float fp8_e4m3::to_f32(uint8_t b) {
  // Bits, not std::ldexp (a library call): the KV cache paths widen every value they read.
  const uint32_t exponent = (b >> 3) & 0xFu, mantissa = b & 0x7u;
  const uint32_t sign = static_cast<uint32_t>(b & 0x80) << 24;
  if (exponent == 0xF && mantissa == 0x7) {
    return f32_from_bits(sign | 0x7fc00000u);  // NaN
  }
  if (exponent == 0) {  // m/8 · 2^-6, exact in an f32
    const float magnitude = static_cast<float>(mantissa) * 0x1.0p-9f;
    return sign ? -magnitude : magnitude;
  }
  // (1 + m/8) · 2^(e-7): f32 exponent e - 7 + 127, the 3 mantissa bits on top.
  return f32_from_bits(sign | ((exponent + 120) << 23) | (mantissa << 20));
}

uint8_t fp8_e4m3::from_f32(float f) {
  const uint32_t u = f32_bits(f);
  const auto sign = static_cast<uint8_t>((u >> 24) & 0x80);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7F;  // NaN
  const float magnitude = f32_from_bits(a);
  if (magnitude >= kMax) return sign | 0x7E;  // saturate (also +-inf)
  if (magnitude < 0x1.0p-6f) {
    // Subnormal range: units of 2^-9. A result of 8 units is the smallest normal (0x08).
    return sign | static_cast<uint8_t>(std::nearbyint(magnitude * 512.0f));
  }
  // Normal: keep 3 of the 23 mantissa bits, rounding the 20 dropped ones to nearest even; a
  // carry into the exponent is the correct result. Below 448 the result stays <= 448.
  const uint32_t rounded = a + 0x7ffffu + ((a >> 20) & 1u);
  const uint32_t exponent = (rounded >> 23) - 127 + 7;
  const uint32_t mantissa = (rounded >> 20) & 0x7u;
  return sign | static_cast<uint8_t>((exponent << 3) | mantissa);
}

}  // namespace ctxpar
