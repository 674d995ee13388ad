#include "ctxpar/model/dummy_weights.h"

#include <cmath>

#include "ctxpar/core/error.h"
#include "ctxpar/core/half.h"

namespace ctxpar::model {
namespace {

constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ull;

// The splitmix64 finalizer: a bijective mix, so distinct counters give distinct outputs.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

DummyInit dummy_init_for(const std::string& name, const Shape& full_shape) {
  if (ends_with(name, "norm.weight")) return {true, 1.0f};
  if (ends_with(name, "norm.bias")) return {true, 0.0f};
  if (ends_with(name, "bias")) return {false, 0.02f};
  if (full_shape.size() >= 2 && full_shape.back() > 0) {
    return {false, static_cast<float>(1.0 / std::sqrt(static_cast<double>(full_shape.back())))};
  }
  return {false, 0.02f};
}

Tensor DummyWeights::get(const std::string& name, const Shape& full_shape, DType want,
                         const Slice& slice) const {
  CTXPAR_CHECK(want == DType::kF32 || want == DType::kBF16 || want == DType::kF16,
               "dummy weights are float; tensor '{}' was asked for as {} (valid: float32, "
               "bfloat16, float16)",
               name, dtype_name(want));
  for (int64_t d : full_shape) {
    CTXPAR_CHECK(d >= 0, "tensor '{}': shape {} has a negative dimension", name,
                 shape_str(full_shape));
  }
  const SliceExtent extent = slice_extent(full_shape, slice, name);
  const DummyInit init = dummy_init_for(name, full_shape);
  // One stream per (seed, name); element i of the full tensor is draw i of that stream.
  const uint64_t stream = mix64(seed_ ^ mix64(fnv1a64(name)));

  Tensor f32 = Tensor::empty(extent.shape, DType::kF32);
  float* out = f32.data<float>();
  for_each_slice_run(extent, [&](int64_t from, int64_t to, int64_t count, bool is_padding) {
    for (int64_t i = 0; i < count; ++i) {
      float v = 0.0f;
      if (!is_padding) {
        if (init.constant) {
          v = init.value;
        } else {
          const uint64_t bits = mix64(stream + static_cast<uint64_t>(from + i + 1) * kGoldenGamma);
          const float u = static_cast<float>(bits >> 40) * 0x1.0p-24f;  // [0, 1), 24 bits exact
          v = (2.0f * u - 1.0f) * init.value;
        }
      }
      out[to + i] = v;
    }
  });
  return want == DType::kF32 ? f32 : f32.to(want);
}

}  // namespace ctxpar::model
