// Helpers shared by the model tests: a scratch directory, seeded RNGs, random tensors, and
// whole-file byte I/O for tests that corrupt files on purpose.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>

#include "ctxpar/core/error.h"
#include "ctxpar/core/tensor.h"

namespace ctxpar::model::testing {

// A fresh directory under the system temp dir, removed with everything in it on scope exit.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "ctxpar_model_test_XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// The message of the ctxpar::Error that fn throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A random seed, printed with every failure in the enclosing scope.
inline uint32_t fresh_seed() {
  return std::random_device{}();
}
#define CTXPAR_SEEDED_RNG(rng)                                        \
  const uint32_t rng##_seed = ::ctxpar::model::testing::fresh_seed(); \
  SCOPED_TRACE(::testing::Message() << "seed " << rng##_seed);        \
  std::mt19937_64 rng(rng##_seed)

inline int64_t uniform_int(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// Random values of any dtype: normal floats (never NaN, so element comparisons are exact)
// and integers spread over the dtype's range.
inline Tensor random_tensor(const Shape& shape, DType dtype, std::mt19937_64& rng) {
  Tensor t = Tensor::empty(shape, dtype);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  auto* p = static_cast<uint8_t*>(t.raw());
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (dtype) {
      case DType::kF32:
        t.data<float>()[i] = normal(rng);
        break;
      case DType::kBF16:
        t.data<bf16>()[i] = bf16(normal(rng));
        break;
      case DType::kF16:
        t.data<f16>()[i] = f16(normal(rng));
        break;
      default: {
        const uint64_t bits = rng();
        std::memcpy(p + i * dtype_size(dtype), &bits, dtype_size(dtype));
      }
    }
  }
  return t;
}

inline bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.raw(), cb.raw(), ca.nbytes()) == 0;
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline void write_text(const std::string& path, const std::string& text) {
  write_bytes(path, text);
}

}  // namespace ctxpar::model::testing
