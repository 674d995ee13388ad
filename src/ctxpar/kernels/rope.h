// Rotary position embedding (RoPE) with the scalings HF configs name in "rope_scaling":
// none, linear, llama3 (Llama 3.1) and yarn (DeepSeek-V2/V3's variant, with mscale).
//
// Pairs: kRotateHalf (GPT-NeoX / Llama / Qwen) rotates (x[j], x[j + r/2]); kInterleaved
// (GPT-J / DeepSeek MLA) rotates (x[2j], x[2j+1]); j < r/2, r = rotary_dim, by the angle
// position·inv_freq[j]:
//   a' = a·cos − b·sin,  b' = b·cos + a·sin,  then both times magnitude_scale (YaRN's mscale).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ctxpar/core/tensor.h"

namespace ctxpar::kernels {

enum class RopeStyle { kRotateHalf, kInterleaved };

struct RopeScaling {
  std::string type = "none";          // "none" (or "default"), "linear", "llama3", "yarn"
  double factor = 1;                  // linear / llama3 / yarn: context extension factor (> 0)
  int64_t original_max_position = 0;  // llama3 / yarn: original_max_position_embeddings
  double beta_fast = 32;              // yarn: rotations bounding the extrapolated dims
  double beta_slow = 1;               // yarn: rotations bounding the interpolated dims
  double mscale = 1;                  // yarn: numerator of the cos/sin magnitude scale
  double mscale_all_dim = 0;          // yarn: denominator of the cos/sin magnitude scale
  double attention_factor = 0;        // yarn: the cos/sin magnitude itself; 0: derived
  double low_freq_factor = 1;         // llama3
  double high_freq_factor = 4;        // llama3
};

// DeepSeek's YaRN magnitude: 1 for scale <= 1, else 0.1·mscale·ln(scale) + 1. The attention
// layer multiplies the softmax scale by yarn_get_mscale(factor, mscale_all_dim)².
double yarn_get_mscale(double scale, double mscale);

// The rotary_dim/2 inverse frequencies after scaling, in double:
//   base:   theta^(−2j/r)
//   linear: base / factor
//   llama3: base kept for wavelengths < original/high_freq_factor, base/factor for
//           wavelengths > original/low_freq_factor, a smooth blend in between (Llama 3.1)
//   yarn:   blend of base/factor (interpolation) and base (extrapolation) with a linear ramp
//           between the correction dims found from beta_fast/beta_slow and original positions
// Throws Error for an unknown type or invalid parameters (named in the message).
std::vector<double> rope_inv_freq(int64_t rotary_dim, double theta, const RopeScaling& scaling);

// Multiplier on cos and sin, 1 except for yarn: attention_factor when it is > 0, else
// yarn_get_mscale(factor, mscale) / yarn_get_mscale(factor, mscale_all_dim) when both are
// non-zero, else yarn_get_mscale(factor, 1) (transformers' rule).
double rope_magnitude_scale(const RopeScaling& scaling);

// Precomputed cos/sin for positions [0, max_position): two f32 tables [max_position,
// rotary_dim/2] (8·max_position·rotary_dim/2 bytes; read-only after construction, so one cache
// can serve every layer and every rank thread). Angles and cos/sin are computed in double.
class RopeCache {
 public:
  // rotary_dim even and >= 2; max_position >= 1; theta > 0.
  RopeCache(int64_t rotary_dim, int64_t max_position, double theta, const RopeScaling& scaling);

  // x [tokens, heads, D] or [tokens, D], f32 or bf16, D >= rotary_dim, last dim contiguous
  // (other strides free, so a view of the rope part of a wider tensor works): rotates
  // x[..., 0:rotary_dim] in place, computing in f32. positions [tokens] int32 or int64; any
  // position outside [0, max_position) throws Error before x is touched.
  void apply(Tensor& x, const Tensor& positions, RopeStyle style) const;

  int64_t rotary_dim() const { return rotary_dim_; }
  int64_t max_position() const { return max_position_; }
  const std::vector<double>& inv_freq() const { return inv_freq_; }
  double magnitude_scale() const { return magnitude_scale_; }

 private:
  int64_t rotary_dim_;
  int64_t max_position_;
  std::vector<double> inv_freq_;
  double magnitude_scale_;
  std::vector<float> cos_;  // [max_position, rotary_dim/2], magnitude_scale folded in
  std::vector<float> sin_;  // [max_position, rotary_dim/2], magnitude_scale folded in
};

// Double-precision reference of RopeCache(rotary_dim, ∞, theta, scaling).apply(x, positions,
// style): same shapes, x f32 rotated in place, angles/cos/sin/products in double.
void rope_reference(Tensor& x, const Tensor& positions, int64_t rotary_dim, double theta,
                    const RopeScaling& scaling, RopeStyle style);

}  // namespace ctxpar::kernels
