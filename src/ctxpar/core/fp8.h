// float8_e4m3fn storage (OCP FP8 E4M3, torch.float8_e4m3fn, safetensors "F8_E4M3"): 1 sign bit,
// 4 exponent bits (bias 7), 3 mantissa bits; no infinities; S.1111.111 is NaN; the largest
// finite magnitude is 448 (S.1111.110); subnormals are m/8 · 2^-6.
#pragma once

#include <cstdint>

namespace ctxpar {

struct fp8_e4m3 {
  uint8_t bits = 0;

  static constexpr float kMax = 448.0f;

  fp8_e4m3() = default;
  explicit fp8_e4m3(float f) : bits(from_f32(f)) {}
  explicit operator float() const { return to_f32(bits); }

  // Exact: every e4m3 value is an f32.
  static float to_f32(uint8_t b);
  // Round to nearest, ties to even. NaN → NaN (0x7F with the sign); magnitudes beyond 448
  // saturate to ±448 (torch turns |x| >= 464 into NaN instead; ctxpar only encodes values
  // it scaled into range, so saturation is the safer choice for rounding at the edge).
  static uint8_t from_f32(float f);
};

}  // namespace ctxpar
