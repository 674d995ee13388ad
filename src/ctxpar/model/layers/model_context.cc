#include "ctxpar/model/layers/model_context.h"

namespace ctxpar::model {

bool ModelContext::keeps_fp8(const std::string& name) const {
  if (weights.is_fp8(name)) return true;
  return options.quantize_fp8 && (quantization == nullptr || !quantization->excludes(name));
}

kernels::Fp8Scaling ModelContext::fp8_scaling(const std::string& name) const {
  return weights.is_fp8(name) ? weights.fp8_scaling(name) : kernels::Fp8Scaling::kBlock128;
}

kernels::Fp8Weight ModelContext::load_fp8(const std::string& name, const Shape& full_shape,
                                          const Slice& slice) const {
  if (weights.is_fp8(name)) return weights.get_fp8(name, full_shape, slice);
  check_fp8_slice(name, full_shape, slice);
  return kernels::quantize_fp8(weights.get(name, full_shape, DType::kF32, slice),
                               quantization != nullptr && quantization->ue8m0_scales);
}

}  // namespace ctxpar::model
