// Safetensors files: a validating, memory-mapped reader and a small writer.
//
// Layout: an 8-byte little-endian header length N, N bytes of JSON, then the data region.
// The JSON is an object mapping tensor names to {"dtype", "shape", "data_offsets": [begin,
// end]} (byte offsets relative to the data region), plus an optional "__metadata__" object
// of string values. The reader trusts nothing in the file: see SafetensorsFile.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ctxpar/core/tensor.h"
#include "ctxpar/model/mapped_file.h"
#include "ctxpar/model/weight_slice.h"

namespace ctxpar::model {

// The largest header accepted (the limit of the reference implementation).
constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// "F32", "BF16", ... for the dtypes ctxpar reads and writes.
std::string_view safetensors_dtype_name(DType dtype);

struct SafetensorsTensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  uint64_t data_begin = 0;  // byte offsets relative to the data region
  uint64_t data_end = 0;
};

class SafetensorsFile {
 public:
  // Maps `path` and validates it completely before returning. Throws Error naming the file
  // (and the tensor, and the numbers) when: the file is shorter than 8 bytes; the header
  // length exceeds kMaxSafetensorsHeaderBytes or the file; the header is not a JSON object
  // (or nests deeper than the format allows, or repeats a key); __metadata__ is not an
  // object of strings; an entry lacks dtype/shape/data_offsets or has them mistyped; a
  // dtype is not one of F32, BF16, F16, I8, U8, I32, I64, F8_E4M3 (others are refused
  // by name); shape × dtype size differs from the entry's byte range; or the byte ranges do
  // not tile the data region exactly (in range, no overlap, no hole, nothing after).
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Every tensor, in data-region order.
  const std::vector<SafetensorsTensorInfo>& tensors() const { return tensors_; }
  // nullptr when the file has no tensor of that name.
  const SafetensorsTensorInfo* find(const std::string& name) const;
  // The tensor's bytes inside the mapping; valid while this object lives.
  const uint8_t* bytes(const SafetensorsTensorInfo& info) const;
  // MappedFile::release_pages: bytes() and read() stay valid.
  void release_pages() const { file_.release_pages(); }

  // Reads the slice of tensor `name` (see WeightSource::get); copies only the slice's bytes
  // out of the mapping. Throws Error if the tensor is missing, its shape is not
  // expected_full_shape, or its dtype cannot convert to `want`.
  Tensor read(const std::string& name, const Shape& expected_full_shape, DType want,
              const Slice& slice) const;

 private:
  MappedFile file_;
  uint64_t data_offset_ = 0;  // 8 + header length
  std::map<std::string, std::string> metadata_;
  std::vector<SafetensorsTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> by_name_;
};

// Writes `tensors` (any layout; stored contiguous, in the given order) to `path`, with the
// data region 8-byte aligned. Names must be unique and not "__metadata__". Throws Error
// naming the path on any I/O failure.
void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Writes a sharded checkpoint's index (model.safetensors.index.json): weight_map maps each
// tensor name to the file (relative to the index) that holds it.
void write_safetensors_index(const std::string& path,
                             const std::map<std::string, std::string>& weight_map);

}  // namespace ctxpar::model
