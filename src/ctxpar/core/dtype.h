// Element types a Tensor can hold.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ctxpar/core/fp8.h"
#include "ctxpar/core/half.h"

namespace ctxpar {

// kF8E4M3: float8_e4m3fn (core/fp8.h), the storage of block-scaled FP8 checkpoint weights.
enum class DType : uint8_t { kF32, kBF16, kF16, kI32, kI64, kU8, kI8, kF8E4M3 };

size_t dtype_size(DType dtype);
std::string_view dtype_name(DType dtype);
// Parses "float32"/"f32", "bfloat16"/"bf16", "float16"/"f16"/"half", "int32", "int64", "uint8",
// "int8", "float8_e4m3fn"/"fp8_e4m3"; throws an Error listing the valid names otherwise.
DType parse_dtype(std::string_view name);

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::kF32;
}
template <>
constexpr DType dtype_of<bf16>() {
  return DType::kBF16;
}
template <>
constexpr DType dtype_of<f16>() {
  return DType::kF16;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::kI32;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::kI64;
}
template <>
constexpr DType dtype_of<uint8_t>() {
  return DType::kU8;
}
template <>
constexpr DType dtype_of<int8_t>() {
  return DType::kI8;
}
template <>
constexpr DType dtype_of<fp8_e4m3>() {
  return DType::kF8E4M3;
}

}  // namespace ctxpar
