#include "ctxpar/model/safetensors.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

#include "ctxpar/core/error.h"
#include "model/test_util.h"

namespace ctxpar::model {
namespace {

using nlohmann::json;
using testing::error_of;
using testing::random_tensor;
using testing::same_bytes;
using testing::uniform_int;

constexpr DType kAllDtypes[] = {DType::kF32, DType::kBF16, DType::kF16, DType::kI8,
                                DType::kU8,  DType::kI32,  DType::kI64};

bool is_float(DType d) {
  return d == DType::kF32 || d == DType::kBF16 || d == DType::kF16;
}

// A file's bytes from a header object and a data region, as the format lays them out.
std::string assemble(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i, n >>= 8) out[i] = static_cast<char>(n & 0xff);
  return out + header + data;
}

TEST(Safetensors, RoundTripsEveryDtypeFullAndSliced) {
  CTXPAR_SEEDED_RNG(rng);
  testing::TempDir dir;
  for (int trial = 0; trial < 6; ++trial) {
    std::vector<std::pair<std::string, Tensor>> tensors;
    const int count = static_cast<int>(uniform_int(rng, 3, 11));
    for (int i = 0; i < count; ++i) {
      Shape shape(static_cast<size_t>(uniform_int(rng, 0, 4)));
      for (auto& d : shape) d = uniform_int(rng, 0, 12) == 0 ? 0 : uniform_int(rng, 1, 13);
      const DType dtype = kAllDtypes[uniform_int(rng, 0, 6)];
      tensors.emplace_back("model.layers." + std::to_string(i) + ".w",
                           random_tensor(shape, dtype, rng));
    }
    const std::map<std::string, std::string> metadata = {{"format", "pt"},
                                                         {"seed", std::to_string(rng_seed)}};
    const std::string path = dir.file("t" + std::to_string(trial) + ".safetensors");
    write_safetensors(path, tensors, metadata);

    const SafetensorsFile file(path);
    EXPECT_EQ(file.metadata(), metadata);
    ASSERT_EQ(file.tensors().size(), tensors.size());
    for (const auto& [name, t] : tensors) {
      SCOPED_TRACE(name + " " + t.describe());
      const SafetensorsTensorInfo* info = file.find(name);
      ASSERT_NE(info, nullptr);
      EXPECT_EQ(info->shape, t.shape());
      EXPECT_EQ(info->dtype, t.dtype());
      EXPECT_TRUE(same_bytes(file.read(name, t.shape(), t.dtype(), Slice::full()), t));
      if (is_float(t.dtype())) {
        for (DType want : {DType::kF32, DType::kBF16, DType::kF16}) {
          EXPECT_TRUE(same_bytes(file.read(name, t.shape(), want, Slice::full()), t.to(want)))
              << "as " << dtype_name(want);
        }
      }
      // Every dim, every part count up to 5 that divides it (3 and 5 included when they do):
      // the parts concatenate back to the full tensor.
      for (int dim = 0; dim < t.ndim(); ++dim) {
        for (int64_t parts = 1; parts <= 5; ++parts) {
          if (t.size(dim) % parts != 0) {
            EXPECT_THROW(file.read(name, t.shape(), t.dtype(), Slice::part(dim, 0, parts)), Error);
            continue;
          }
          const int64_t p = t.size(dim) / parts;
          for (int64_t r = 0; r < parts; ++r) {
            const Tensor got = file.read(name, t.shape(), t.dtype(), Slice::part(dim, r, parts));
            EXPECT_TRUE(same_bytes(got, t.slice(dim, r * p, (r + 1) * p).contiguous()))
                << "dim " << dim << " part " << r << "/" << parts;
          }
        }
      }
    }
    EXPECT_EQ(file.find("model.layers.999.w"), nullptr);
  }
}

TEST(Safetensors, WriterAlignsTheDataRegionAndReaderTakesUnalignedOnes) {
  CTXPAR_SEEDED_RNG(rng);
  testing::TempDir dir;
  const Tensor a = random_tensor({uniform_int(rng, 1, 9), 3}, DType::kF32, rng);
  const Tensor b = random_tensor({uniform_int(rng, 1, 9)}, DType::kI64, rng);
  write_safetensors(dir.file("a.safetensors"), {{"a", a}, {"b", b}});
  const std::string bytes = testing::read_bytes(dir.file("a.safetensors"));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[i]);
  EXPECT_EQ((8 + n) % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + a.nbytes() + b.nbytes());

  // A hand-made file whose header length is odd: f32 and i64 data then sit at odd addresses.
  json header = {{"x", {{"dtype", "F32"}, {"shape", a.shape()}, {"data_offsets", {0, a.nbytes()}}}},
                 {"y",
                  {{"dtype", "I64"},
                   {"shape", b.shape()},
                   {"data_offsets", {a.nbytes(), a.nbytes() + b.nbytes()}}}}};
  std::string text = header.dump();
  if ((8 + text.size()) % 2 == 0) text += ' ';
  testing::write_bytes(
      dir.file("odd.safetensors"),
      assemble(text, std::string(static_cast<const char*>(a.raw()), a.nbytes()) +
                         std::string(static_cast<const char*>(b.raw()), b.nbytes())));
  const SafetensorsFile odd(dir.file("odd.safetensors"));
  EXPECT_TRUE(same_bytes(odd.read("x", a.shape(), DType::kF32, Slice::full()), a));
  EXPECT_TRUE(same_bytes(odd.read("y", b.shape(), DType::kI64, Slice::full()), b));
}

TEST(Safetensors, EmptyAndScalarTensorsAndEmptyFile) {
  testing::TempDir dir;
  Tensor scalar = Tensor::empty({}, DType::kF32);
  scalar.data<float>()[0] = 2.5f;
  const Tensor empty_a = Tensor::empty({0, 4}, DType::kBF16);
  const Tensor empty_b = Tensor::empty({3, 0}, DType::kI32);
  write_safetensors(dir.file("e.safetensors"), {{"s", scalar}, {"ea", empty_a}, {"eb", empty_b}});
  const SafetensorsFile f(dir.file("e.safetensors"));
  EXPECT_EQ(f.read("s", {}, DType::kF32, Slice::full()).data<float>()[0], 2.5f);
  EXPECT_EQ(f.read("ea", {0, 4}, DType::kF32, Slice::full()).numel(), 0);
  EXPECT_EQ(f.read("eb", {3, 0}, DType::kI32, Slice::part(0, 2, 3)).shape(), (Shape{1, 0}));
  write_safetensors(dir.file("none.safetensors"), {});
  EXPECT_TRUE(SafetensorsFile(dir.file("none.safetensors")).tensors().empty());
}

TEST(Safetensors, ShapeMismatchAndMissingTensorNameTheTensor) {
  CTXPAR_SEEDED_RNG(rng);
  testing::TempDir dir;
  const Shape shape{uniform_int(rng, 2, 9), uniform_int(rng, 2, 9)};
  write_safetensors(dir.file("m.safetensors"),
                    {{"lm_head.weight", random_tensor(shape, DType::kBF16, rng)}});
  const SafetensorsFile f(dir.file("m.safetensors"));
  Shape wrong = shape;
  wrong[1] += 1;
  std::string msg = error_of([&] { f.read("lm_head.weight", wrong, DType::kF32, Slice::full()); });
  EXPECT_NE(msg.find("lm_head.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find(shape_str(shape)), std::string::npos) << msg;
  EXPECT_NE(msg.find(shape_str(wrong)), std::string::npos) << msg;
  msg = error_of([&] { f.read("lm_head.bias", shape, DType::kF32, Slice::full()); });
  EXPECT_NE(msg.find("lm_head.bias"), std::string::npos) << msg;
  EXPECT_NE(msg.find(dir.file("m.safetensors")), std::string::npos) << msg;
  msg = error_of([&] { f.read("lm_head.weight", shape, DType::kI32, Slice::full()); });
  EXPECT_NE(msg.find("lm_head.weight"), std::string::npos) << msg;
}

TEST(Safetensors, RefusesDtypesItCannotReadNamingTheTensor) {
  testing::TempDir dir;
  const std::vector<std::pair<std::string, int>> dtypes = {{"F8_E5M2", 1}, {"F64", 8}, {"BOOL", 1},
                                                           {"U16", 2},     {"Q4", 1},  {"f32", 4}};
  for (const auto& [dtype, size] : dtypes) {
    const json header = {{"model.layers.3.self_attn.q_proj.weight",
                          {{"dtype", dtype}, {"shape", {2, 3}}, {"data_offsets", {0, 6 * size}}}}};
    testing::write_bytes(dir.file("d.safetensors"),
                         assemble(header.dump(), std::string(static_cast<size_t>(6 * size), 'x')));
    const std::string msg = error_of([&] { SafetensorsFile f(dir.file("d.safetensors")); });
    EXPECT_NE(msg.find("model.layers.3.self_attn.q_proj.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find(dtype), std::string::npos) << msg;
    EXPECT_NE(msg.find("F32, BF16, F16, I8, U8, I32, I64, F8_E4M3"), std::string::npos) << msg;
  }
}

TEST(Safetensors, MissingOrTinyFilesNameThePath) {
  testing::TempDir dir;
  std::string msg = error_of([&] { SafetensorsFile f(dir.file("absent.safetensors")); });
  EXPECT_NE(msg.find(dir.file("absent.safetensors")), std::string::npos) << msg;
  testing::write_bytes(dir.file("short.safetensors"), "abc");
  msg = error_of([&] { SafetensorsFile f(dir.file("short.safetensors")); });
  EXPECT_NE(msg.find("3 bytes"), std::string::npos) << msg;
  testing::write_bytes(dir.file("zero.safetensors"), "");
  EXPECT_THROW(SafetensorsFile(dir.file("zero.safetensors")), Error);
  EXPECT_THROW(SafetensorsFile(dir.path().string()), Error);  // a directory
}

}  // namespace
}  // namespace ctxpar::model
