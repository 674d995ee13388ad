#include "ctxpar/core/dtype.h"

#include "ctxpar/core/error.h"

namespace ctxpar {

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return 4;
    case DType::kBF16:
      return 2;
    case DType::kF16:
      return 2;
    case DType::kI32:
      return 4;
    case DType::kI64:
      return 8;
    case DType::kU8:
      return 1;
    case DType::kI8:
      return 1;
    case DType::kF8E4M3:
      return 1;
  }
  CTXPAR_FAIL("unknown dtype code {}", static_cast<int>(dtype));
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "float32";
    case DType::kBF16:
      return "bfloat16";
    case DType::kF16:
      return "float16";
    case DType::kI32:
      return "int32";
    case DType::kI64:
      return "int64";
    case DType::kU8:
      return "uint8";
    case DType::kI8:
      return "int8";
    case DType::kF8E4M3:
      return "float8_e4m3fn";
  }
  return "unknown";
}

DType parse_dtype(std::string_view name) {
  if (name == "float32" || name == "f32" || name == "float") return DType::kF32;
  if (name == "bfloat16" || name == "bf16") return DType::kBF16;
  if (name == "float16" || name == "f16" || name == "half") return DType::kF16;
  if (name == "int32" || name == "i32") return DType::kI32;
  if (name == "int64" || name == "i64") return DType::kI64;
  if (name == "uint8" || name == "u8") return DType::kU8;
  if (name == "int8" || name == "i8") return DType::kI8;
  if (name == "float8_e4m3fn" || name == "fp8_e4m3") return DType::kF8E4M3;
  CTXPAR_FAIL(
      "unknown dtype '{}'; valid: float32, bfloat16, float16, int32, int64, uint8, int8, "
      "float8_e4m3fn",
      name);
}

}  // namespace ctxpar
