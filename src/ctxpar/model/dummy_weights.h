// DummyWeights: made-up weights for runs without a checkpoint (--load-format dummy).
//
// Every element is a pure function of (seed, tensor name, its flat index in the full
// tensor), computed with a counter-based hash, so a rank generates exactly its slice and
// every (T, N) layout sees the same full weights. Values are scaled so activations stay
// finite and O(1) through many layers.
#pragma once

#include <cstdint>
#include <string>

#include "ctxpar/model/weight_source.h"

namespace ctxpar::model {

// How a tensor is filled, decided from its name and full shape:
// - names ending in "norm.weight" (RMSNorm, LayerNorm, q_a_layernorm, ...): constant 1;
// - names ending in "norm.bias": constant 0;
// - other names ending in "bias" (projection biases, e_score_correction_bias): uniform ±0.02;
// - tensors of 2 or more dims: uniform ±1/sqrt(fan_in), fan_in = the last dim (the input
//   features of an [out, in] linear weight);
// - other 1-D or 0-D tensors: uniform ±0.02.
struct DummyInit {
  bool constant = false;
  float value = 0;  // the constant, or the half-width of the uniform range
};
DummyInit dummy_init_for(const std::string& name, const Shape& full_shape);

class DummyWeights : public WeightSource {
 public:
  explicit DummyWeights(uint64_t seed) : seed_(seed) {}

  // Every name exists.
  bool has(const std::string& /*name*/) const override { return true; }
  // The slice of the tensor described above, as float dtype `want` (f32, bf16, f16; values
  // are generated in f32 and rounded). Padding rows of a padded slice are zero. Throws Error
  // for an integer `want` or a slice that does not fit.
  Tensor get(const std::string& name, const Shape& full_shape, DType want,
             const Slice& slice) const override;

  uint64_t seed() const { return seed_; }

 private:
  uint64_t seed_;
};

}  // namespace ctxpar::model
