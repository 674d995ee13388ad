// The inverse-frequency and magnitude formulas of the RoPE scalings (rope.h states them).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/rope.h"

namespace ctxpar::kernels {
namespace {

bool is_none(const RopeScaling& s) {
  return s.type == "none" || s.type == "default";
}

void check_scaling(int64_t rotary_dim, double theta, const RopeScaling& s) {
  CTXPAR_CHECK_INPUT(rotary_dim >= 2 && rotary_dim % 2 == 0,
                     "RoPE rotary_dim {} must be even and >= 2", rotary_dim);
  CTXPAR_CHECK_INPUT(theta > 0 && std::isfinite(theta), "RoPE theta {} must be finite and > 0",
                     theta);
  CTXPAR_CHECK_INPUT(
      is_none(s) || s.type == "linear" || s.type == "llama3" || s.type == "yarn",
      "RoPE scaling type '{}' is unknown; valid: none, default, linear, llama3, yarn", s.type);
  if (is_none(s)) return;
  CTXPAR_CHECK_INPUT(s.factor > 0 && std::isfinite(s.factor),
                     "RoPE '{}' scaling factor {} must be finite and > 0", s.type, s.factor);
  if (s.type == "llama3" || s.type == "yarn") {
    CTXPAR_CHECK_INPUT(s.original_max_position > 0,
                       "RoPE '{}' scaling needs original_max_position > 0, got {}", s.type,
                       s.original_max_position);
  }
  if (s.type == "llama3") {
    CTXPAR_CHECK_INPUT(
        s.low_freq_factor > 0 && s.high_freq_factor > s.low_freq_factor,
        "RoPE llama3 scaling needs 0 < low_freq_factor < high_freq_factor, got {} and {}",
        s.low_freq_factor, s.high_freq_factor);
  }
  if (s.type == "yarn") {
    CTXPAR_CHECK_INPUT(s.beta_fast > 0 && s.beta_slow > 0,
                       "RoPE yarn scaling needs beta_fast and beta_slow > 0, got {} and {}",
                       s.beta_fast, s.beta_slow);
  }
}

// YaRN: the (fractional) dim index whose frequency completes `rotations` turns over the
// original context.
double yarn_correction_dim(double rotations, int64_t rotary_dim, double theta,
                           int64_t original_max_position) {
  return static_cast<double>(rotary_dim) *
         std::log(static_cast<double>(original_max_position) / (rotations * 2 * std::numbers::pi)) /
         (2 * std::log(theta));
}

}  // namespace

double yarn_get_mscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// As transformers' YaRN: an explicit attention_factor wins; else the mscale ratio when both
// mscale and mscale_all_dim are given (non-zero); else yarn_get_mscale(factor, 1).
double rope_magnitude_scale(const RopeScaling& s) {
  if (s.type != "yarn") return 1.0;
  if (s.attention_factor > 0) return s.attention_factor;
  if (s.mscale != 0 && s.mscale_all_dim != 0) {
    return yarn_get_mscale(s.factor, s.mscale) / yarn_get_mscale(s.factor, s.mscale_all_dim);
  }
  return yarn_get_mscale(s.factor, 1.0);
}

std::vector<double> rope_inv_freq(int64_t rotary_dim, double theta, const RopeScaling& s) {
  check_scaling(rotary_dim, theta, s);
  const int64_t half = rotary_dim / 2;
  std::vector<double> inv_freq(static_cast<size_t>(half));
  for (int64_t j = 0; j < half; ++j) {
    inv_freq[j] =
        1.0 / std::pow(theta, static_cast<double>(2 * j) / static_cast<double>(rotary_dim));
  }
  if (is_none(s)) return inv_freq;

  if (s.type == "linear") {
    for (double& f : inv_freq) f /= s.factor;
  } else if (s.type == "llama3") {
    const double original = static_cast<double>(s.original_max_position);
    const double low_freq_wavelen = original / s.low_freq_factor;
    const double high_freq_wavelen = original / s.high_freq_factor;
    for (double& f : inv_freq) {
      const double wavelen = 2 * std::numbers::pi / f;
      if (wavelen < high_freq_wavelen) continue;  // high frequencies: unchanged
      if (wavelen > low_freq_wavelen) {           // low frequencies: fully interpolated
        f /= s.factor;
        continue;
      }
      const double smooth =
          (original / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      f = (1 - smooth) * f / s.factor + smooth * f;
    }
  } else {  // yarn
    const double low = std::max(
        std::floor(yarn_correction_dim(s.beta_fast, rotary_dim, theta, s.original_max_position)),
        0.0);
    double high = std::min(
        std::ceil(yarn_correction_dim(s.beta_slow, rotary_dim, theta, s.original_max_position)),
        static_cast<double>(rotary_dim - 1));
    if (low == high) high += 0.001;  // avoid a zero-width ramp, as the reference does
    for (int64_t j = 0; j < half; ++j) {
      // ramp 0 below `low` (keep the original frequency), 1 above `high` (divide by factor).
      const double ramp = std::clamp((static_cast<double>(j) - low) / (high - low), 0.0, 1.0);
      const double extrapolated = inv_freq[j];
      const double interpolated = inv_freq[j] / s.factor;
      inv_freq[j] = interpolated * ramp + extrapolated * (1 - ramp);
    }
  }
  return inv_freq;
}

}  // namespace ctxpar::kernels
