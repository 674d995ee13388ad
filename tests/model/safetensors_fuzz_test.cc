// A valid safetensors file fed to the reader in thousands of corrupted variants. Every
// variant that breaks the format must give a ctxpar::Error (never a crash, a hang or another
// exception type); random byte flips that happen to leave a valid file must give a file
// whose tensors still tile the data region and read back. Run this under
// -fsanitize=address too: an out-of-bounds read would otherwise go unnoticed.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/model/safetensors.h"
#include "model/test_util.h"

namespace ctxpar::model {
namespace {

using nlohmann::json;
using testing::uniform_int;

struct ValidFile {
  std::string bytes;   // the whole file
  std::string header;  // the JSON text as written
  std::string data;    // the data region
  json entries;        // the parsed header
};

ValidFile make_valid_file(std::mt19937_64& rng, const std::string& path) {
  const DType dtypes[] = {DType::kF32, DType::kBF16, DType::kF16, DType::kI8,
                          DType::kU8,  DType::kI32,  DType::kI64};
  std::vector<std::pair<std::string, Tensor>> tensors;
  const int count = static_cast<int>(uniform_int(rng, 4, 7));
  for (int i = 0; i < count; ++i) {
    Shape shape(static_cast<size_t>(uniform_int(rng, 1, 3)));
    for (auto& d : shape) d = uniform_int(rng, 1, 6);
    tensors.emplace_back("blk." + std::to_string(i) + ".weight",
                         testing::random_tensor(shape, dtypes[uniform_int(rng, 0, 6)], rng));
  }
  write_safetensors(path, tensors, {{"format", "pt"}});
  ValidFile v;
  v.bytes = testing::read_bytes(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(v.bytes[i]);
  v.header = v.bytes.substr(8, n);
  v.data = v.bytes.substr(8 + n);
  v.entries = json::parse(v.header);
  return v;
}

std::string assemble(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i, n >>= 8) out[i] = static_cast<char>(n & 0xff);
  return out + header + data;
}

std::string with_header_length(std::string bytes, uint64_t n) {
  for (int i = 0; i < 8; ++i, n >>= 8) bytes[i] = static_cast<char>(n & 0xff);
  return bytes;
}

// Names of the tensor entries (everything but __metadata__).
std::vector<std::string> tensor_names(const json& entries) {
  std::vector<std::string> names;
  for (const auto& [k, v] : entries.items())
    if (k != "__metadata__") names.push_back(k);
  return names;
}

class Fuzzer {
 public:
  explicit Fuzzer(std::string path) : path_(std::move(path)) {}

  // The variant must be refused with a ctxpar::Error.
  void expect_rejected(const std::string& bytes, const std::string& what) {
    ++variants_;
    write_variant(bytes);
    EXPECT_THROW(SafetensorsFile f(path_), Error) << what;
  }

  // The variant may be valid; if the reader accepts it, what it accepted must be sound.
  void expect_rejected_or_sound(const std::string& bytes, const std::string& what) {
    ++variants_;
    write_variant(bytes);
    try {
      const SafetensorsFile f(path_);
      ++accepted_;
      uint64_t expected_begin = 0;
      for (const SafetensorsTensorInfo& t : f.tensors()) {
        EXPECT_EQ(t.data_begin, expected_begin) << what;
        expected_begin = t.data_end;
        const Tensor read = f.read(t.name, t.shape, t.dtype, Slice::full());
        EXPECT_EQ(read.nbytes(), t.data_end - t.data_begin) << what;
      }
      uint64_t header_len = 0;
      for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(bytes[i]);
      EXPECT_EQ(expected_begin, bytes.size() - 8 - header_len) << what;
    } catch (const Error&) {
      ++rejected_;
    }
  }

  int variants() const { return variants_; }
  int accepted() const { return accepted_; }
  int rejected() const { return rejected_; }

 private:
  // A fresh file each time: rewriting a file in place by truncation makes ext4 flush it on
  // close (its replace-by-truncate heuristic), which would make thousands of variants slow.
  void write_variant(const std::string& bytes) {
    std::filesystem::remove(path_);
    testing::write_bytes(path_, bytes);
  }

  std::string path_;
  int variants_ = 0, accepted_ = 0, rejected_ = 0;
};

TEST(SafetensorsFuzz, TruncationAndHeaderLengthCorruption) {
  CTXPAR_SEEDED_RNG(rng);
  testing::TempDir dir;
  const ValidFile v = make_valid_file(rng, dir.file("valid.safetensors"));
  Fuzzer fuzz(dir.file("variant.safetensors"));
  ASSERT_NO_THROW(SafetensorsFile f(dir.file("valid.safetensors")));

  const size_t header_end = 8 + v.header.size();
  for (size_t cut = 0; cut < header_end; ++cut) {
    fuzz.expect_rejected(v.bytes.substr(0, cut), "truncated at header byte " + std::to_string(cut));
  }
  for (int i = 0; i < 300; ++i) {
    const auto cut = static_cast<size_t>(uniform_int(rng, static_cast<int64_t>(header_end),
                                                     static_cast<int64_t>(v.bytes.size()) - 1));
    fuzz.expect_rejected(v.bytes.substr(0, cut), "truncated at data byte " + std::to_string(cut));
  }

  const uint64_t n = v.header.size(), size = v.bytes.size();
  std::vector<uint64_t> lengths = {
      0,          1,          n - 1, n + 1, size - 8 + 1, kMaxSafetensorsHeaderBytes + 1,
      1ull << 32, 1ull << 63, ~0ull};
  for (int i = 0; i < 40; ++i) lengths.push_back(size - 8 + 1 + rng() % (1ull << 40));
  for (int i = 0; i < 40; ++i) lengths.push_back(rng());
  for (uint64_t len : lengths) {
    fuzz.expect_rejected(with_header_length(v.bytes, len), "header length " + std::to_string(len));
  }
  EXPECT_GT(fuzz.variants(), 500);
}

TEST(SafetensorsFuzz, RandomByteFlipsInTheHeader) {
  CTXPAR_SEEDED_RNG(rng);
  testing::TempDir dir;
  const ValidFile v = make_valid_file(rng, dir.file("valid.safetensors"));
  Fuzzer fuzz(dir.file("variant.safetensors"));
  const std::string structural = "{}[]:,\"0123456789";
  for (int i = 0; i < 2500; ++i) {
    std::string bytes = v.bytes;
    const int flips = static_cast<int>(uniform_int(rng, 1, 3));
    std::string what = "flips:";
    for (int k = 0; k < flips; ++k) {
      size_t pos;
      if (rng() % 2 == 0) {
        // Aim at the bytes that carry structure and numbers.
        do {
          pos = 8 + rng() % v.header.size();
        } while (structural.find(bytes[pos]) == std::string::npos && rng() % 8 != 0);
      } else {
        pos = 8 + rng() % v.header.size();
      }
      const char value = static_cast<char>(rng() % 256);
      what += " @" + std::to_string(pos) + "=" + std::to_string(static_cast<uint8_t>(value));
      bytes[pos] = value;
    }
    fuzz.expect_rejected_or_sound(bytes, what);
  }
  // Most flips break something; some (inside a name or a metadata string) legitimately don't.
  EXPECT_GT(fuzz.rejected(), fuzz.variants() / 2);
}

TEST(SafetensorsFuzz, StructuralCorruptionsAreAllRejected) {
  CTXPAR_SEEDED_RNG(rng);
  testing::TempDir dir;
  const ValidFile v = make_valid_file(rng, dir.file("valid.safetensors"));
  Fuzzer fuzz(dir.file("variant.safetensors"));
  const std::vector<std::string> names = tensor_names(v.entries);
  auto pick = [&] { return names[rng() % names.size()]; };
  auto mutated = [&](const std::function<void(json&)>& edit) {
    json j = v.entries;
    edit(j);
    return assemble(j.dump(), v.data);
  };
  // Entries sorted by data offset, to find neighbours.
  std::vector<std::string> by_offset = names;
  std::sort(by_offset.begin(), by_offset.end(), [&](const std::string& a, const std::string& b) {
    return v.entries[a]["data_offsets"][0].get<uint64_t>() <
           v.entries[b]["data_offsets"][0].get<uint64_t>();
  });
  const uint64_t data_size = v.data.size();

  for (int i = 0; i < 100; ++i) {
    // Overlap: move a non-first tensor back by k bytes (its size stays right).
    const std::string name = by_offset[1 + rng() % (by_offset.size() - 1)];
    const uint64_t begin = v.entries[name]["data_offsets"][0].get<uint64_t>();
    const uint64_t k = 1 + rng() % begin;
    fuzz.expect_rejected(mutated([&](json& j) {
                           j[name]["data_offsets"][0] = begin - k;
                           j[name]["data_offsets"][1] =
                               v.entries[name]["data_offsets"][1].get<uint64_t>() - k;
                         }),
                         "overlap " + name);
  }
  for (int i = 0; i < 100; ++i) {
    // Out of range: an end (and possibly begin) past the data region.
    const std::string name = pick();
    const uint64_t extra = 1 + rng() % 100000;
    fuzz.expect_rejected(mutated([&](json& j) {
                           auto& off = j[name]["data_offsets"];
                           off[1] = data_size + extra;
                           if (rng() % 2) off[0] = data_size + extra / 2;
                         }),
                         "out of range " + name);
  }
  for (int i = 0; i < 100; ++i) {
    // Holes: bytes nobody indexes, at the end or between two tensors.
    const uint64_t k = 1 + rng() % 64;
    if (i % 2 == 0) {
      fuzz.expect_rejected(assemble(v.header, v.data + std::string(k, '\x7f')), "trailing bytes");
    } else {
      const std::string name = by_offset[1 + rng() % (by_offset.size() - 1)];
      const uint64_t at = v.entries[name]["data_offsets"][0].get<uint64_t>();
      json j = v.entries;
      for (const std::string& other : names) {
        auto& off = j[other]["data_offsets"];
        if (off[0].get<uint64_t>() >= at) {
          off[0] = off[0].get<uint64_t>() + k;
          off[1] = off[1].get<uint64_t>() + k;
        }
      }
      std::string data = v.data;
      data.insert(at, std::string(k, '\0'));
      fuzz.expect_rejected(assemble(j.dump(), data), "hole before " + name);
    }
  }
  for (int i = 0; i < 100; ++i) {
    // Shape × dtype size differs from the byte range.
    const std::string name = pick();
    fuzz.expect_rejected(mutated([&](json& j) {
                           auto& shape = j[name]["shape"];
                           if (rng() % 3 == 0) {
                             // A dtype of another element size.
                             const std::string d = j[name]["dtype"];
                             const bool wide = d == "F32" || d == "I32" || d == "I64";
                             j[name]["dtype"] = wide ? "U8" : "F32";
                           } else if (rng() % 2 == 0) {
                             const size_t at = rng() % shape.size();
                             shape[at] = shape[at].get<uint64_t>() + 1 + rng() % 5;
                           } else {
                             shape.push_back(2 + rng() % 5);
                           }
                         }),
                         "size mismatch " + name);
  }
  for (const std::string& header : std::vector<std::string>{
           "[]", "[1,2]", "\"text\"", "42", "null", "true", "false", "{", "}", "{}}", "{\"a\":}",
           " {}", "\t{}", "{}garbage", "{}\x01", std::string("{\0}", 3)}) {
    fuzz.expect_rejected(assemble(header, v.data), "header " + header);
  }
  for (int i = 0; i < 100; ++i) {
    // Bad dtype strings and dtype types.
    const std::string name = pick();
    json bad;
    switch (rng() % 6) {
      case 0:
        bad = "f32";
        break;
      case 1:
        bad = "";
        break;
      case 2:
        bad = 4;
        break;
      case 3:
        bad = json::array({"F32"});
        break;
      case 4:
        bad = nullptr;
        break;
      default: {
        std::string s;
        for (int c = 0, len = 1 + static_cast<int>(rng() % 6); c < len; ++c)
          s += static_cast<char>('A' + rng() % 26);
        if (s == "BF" || s == "F") s += "Q";
        bad = s;
      }
    }
    fuzz.expect_rejected(mutated([&](json& j) { j[name]["dtype"] = bad; }), "dtype " + bad.dump());
  }
  const std::vector<json> bad_numbers = {2.5, "3",  nullptr, true, json::array({1}), json::object(),
                                         -1,  -0.0, 1e30,    -7};
  for (int i = 0; i < 400; ++i) {
    // Non-integer or negative shapes and offsets, mistyped containers.
    const std::string name = pick();
    const json bad = bad_numbers[rng() % bad_numbers.size()];
    switch (rng() % 6) {
      case 0:
        fuzz.expect_rejected(mutated([&](json& j) {
                               auto& shape = j[name]["shape"];
                               shape[rng() % shape.size()] = bad;
                             }),
                             "shape element " + bad.dump());
        break;
      case 1:
        fuzz.expect_rejected(mutated([&](json& j) { j[name]["data_offsets"][rng() % 2] = bad; }),
                             "offset " + bad.dump());
        break;
      case 2:
        fuzz.expect_rejected(mutated([&](json& j) {
                               // [1] is a valid shape for a one-element tensor: not "bad".
                               j[name]["shape"] = bad.is_array() ? json::array({1, "1"}) : bad;
                             }),
                             "shape " + bad.dump());
        break;
      case 3:
        fuzz.expect_rejected(mutated([&](json& j) {
                               auto& off = j[name]["data_offsets"];
                               if (rng() % 2) {
                                 off.push_back(off[1]);
                               } else {
                                 off.erase(1);
                               }
                             }),
                             "offsets of wrong length");
        break;
      case 4:
        fuzz.expect_rejected(mutated([&](json& j) {
                               auto& off = j[name]["data_offsets"];
                               const json b = off[0];
                               off[0] = off[1].get<uint64_t>() + 1 + rng() % 9;
                               off[1] = b;
                             }),
                             "begin > end");
        break;
      default:
        fuzz.expect_rejected(mutated([&](json& j) { j[name] = bad; }), "entry " + bad.dump());
    }
  }
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    for (int i = 0; i < 10; ++i) {
      const std::string name = pick();
      fuzz.expect_rejected(mutated([&](json& j) { j[name].erase(key); }),
                           std::string("missing ") + key);
    }
  }
  for (const json& meta : {json(5), json("pt"), json::array({"a"}), json{{"format", 1}},
                           json{{"format", nullptr}}, json{{"nested", {{"a", "b"}}}}}) {
    fuzz.expect_rejected(mutated([&](json& j) { j["__metadata__"] = meta; }),
                         "metadata " + meta.dump());
  }
  for (int i = 0; i < 40; ++i) {
    // A duplicate key, textually (a JSON library would keep one silently).
    const std::string name = pick();
    const std::string entry = "\"" + name + "\":" + v.entries[name].dump() + ",";
    std::string header = v.header;
    header.insert(1, entry);
    fuzz.expect_rejected(assemble(header, v.data), "duplicate " + name);
  }
  for (int depth = 3; depth < 60; depth += 4) {
    // Nesting deeper than header → entry → shape.
    std::string deep = std::string(static_cast<size_t>(depth), '[') + "1" +
                       std::string(static_cast<size_t>(depth), ']');
    std::string header = v.header;
    header.insert(1, "\"deep\":" + deep + ",");
    fuzz.expect_rejected(assemble(header, v.data), "nesting " + std::to_string(depth));
  }
  for (int i = 0; i < 40; ++i) {
    // Huge dims whose product overflows, with or without a zero dim beside them.
    const std::string name = pick();
    fuzz.expect_rejected(mutated([&](json& j) {
                           json shape = {1ull << (20 + rng() % 44), 1ull << (20 + rng() % 44)};
                           if (rng() % 2) shape.push_back(0);
                           if (rng() % 2) shape.push_back(~0ull);
                           j[name]["shape"] = shape;
                         }),
                         "huge shape");
  }
  EXPECT_GT(fuzz.variants(), 1000);
}

}  // namespace
}  // namespace ctxpar::model
