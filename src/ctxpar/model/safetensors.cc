#include "ctxpar/model/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <optional>
#include <set>
#include <tuple>

#include "ctxpar/core/error.h"

namespace ctxpar::model {
namespace {

using nlohmann::json;

constexpr std::string_view kSupportedDtypes = "F32, BF16, F16, I8, U8, I32, I64, F8_E4M3";

std::optional<DType> dtype_from_safetensors(std::string_view s) {
  if (s == "F32") return DType::kF32;
  if (s == "BF16") return DType::kBF16;
  if (s == "F16") return DType::kF16;
  if (s == "I8") return DType::kI8;
  if (s == "U8") return DType::kU8;
  if (s == "I32") return DType::kI32;
  if (s == "I64") return DType::kI64;
  if (s == "F8_E4M3") return DType::kF8E4M3;
  return std::nullopt;
}

// Dtypes of the format that ctxpar does not read (yet): named so the message can say so
// instead of calling a valid file corrupt.
bool is_known_unsupported_dtype(std::string_view s) {
  for (std::string_view d : {"BOOL", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2", "I16", "U16",
                             "U32", "U64", "F64", "C64"}) {
    if (s == d) return true;
  }
  return false;
}

uint64_t read_le_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// A JSON parse that rejects what json::parse would accept silently: duplicate keys (the
// last one would win, letting two entries alias the same name) and nesting deeper than
// header → entry → shape, which also bounds the parser's memory on hostile input.
json parse_header_json(const char* begin, const char* end, const std::string& path) {
  std::vector<std::set<std::string>> keys;  // one set per open object; arrays hold an empty one
  auto callback = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        keys.emplace_back();
        CTXPAR_CHECK_INPUT(keys.size() <= 3,
                           "safetensors file '{}': header nests deeper than the format allows "
                           "(header object, tensor entry, shape list)",
                           path);
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!keys.empty()) keys.pop_back();
        break;
      case json::parse_event_t::key: {
        const std::string& k = parsed.get_ref<const std::string&>();
        CTXPAR_CHECK_INPUT(!keys.empty() && keys.back().insert(k).second,
                           "safetensors file '{}': header repeats the key '{}'", path, k);
        break;
      }
      case json::parse_event_t::value:
        break;
    }
    return true;
  };
  try {
    return json::parse(begin, end, callback);
  } catch (const json::exception& e) {
    CTXPAR_INPUT_FAIL("safetensors file '{}': header is not valid JSON: {}", path, e.what());
  }
}

uint64_t json_u64(const json& v) {
  return v.get<uint64_t>();
}

SafetensorsTensorInfo parse_entry(const std::string& name, const json& entry, uint64_t data_size,
                                  const std::string& path) {
  CTXPAR_CHECK_INPUT(entry.is_object(),
                     "safetensors file '{}': tensor '{}' must be an object with dtype, shape and "
                     "data_offsets, got {}",
                     path, name, entry.type_name());
  for (const char* key : {"dtype", "shape", "data_offsets"}) {
    CTXPAR_CHECK_INPUT(entry.contains(key), "safetensors file '{}': tensor '{}' has no '{}'", path,
                       name, key);
  }
  SafetensorsTensorInfo info;
  info.name = name;

  const json& dtype = entry.at("dtype");
  CTXPAR_CHECK_INPUT(dtype.is_string(),
                     "safetensors file '{}': tensor '{}' has a non-string dtype {}", path, name,
                     dtype.dump());
  const std::string& dname = dtype.get_ref<const std::string&>();
  const std::optional<DType> d = dtype_from_safetensors(dname);
  if (!d) {
    CTXPAR_INPUT_FAIL("safetensors file '{}': tensor '{}' has {} dtype '{}'; supported dtypes: {}",
                      path, name, is_known_unsupported_dtype(dname) ? "unsupported" : "unknown",
                      dname, kSupportedDtypes);
  }
  info.dtype = *d;

  const json& shape = entry.at("shape");
  CTXPAR_CHECK_INPUT(shape.is_array(), "safetensors file '{}': tensor '{}' has a non-list shape {}",
                     path, name, shape.dump());
  // Product of the non-zero dims, kept far below int64 overflow so shape arithmetic
  // elsewhere (shape_numel, byte counts) is always defined.
  constexpr uint64_t kMaxElements = uint64_t{1} << 56;
  uint64_t nonzero_product = 1;
  bool has_zero = false;
  for (const json& dim : shape) {
    CTXPAR_CHECK_INPUT(
        dim.is_number_unsigned(),
        "safetensors file '{}': tensor '{}' shape {} has {}, not a non-negative integer", path,
        name, shape.dump(), dim.dump());
    const uint64_t n = json_u64(dim);
    if (n == 0) {
      has_zero = true;
      info.shape.push_back(0);
      continue;
    }
    CTXPAR_CHECK_INPUT(
        n <= kMaxElements && nonzero_product <= kMaxElements / n,
        "safetensors file '{}': tensor '{}' shape {} has more elements than any file "
        "can hold",
        path, name, shape.dump());
    nonzero_product *= n;
    info.shape.push_back(static_cast<int64_t>(n));
  }
  const uint64_t numel = has_zero ? 0 : nonzero_product;

  const json& offsets = entry.at("data_offsets");
  CTXPAR_CHECK_INPUT(offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() &&
                         offsets[1].is_number_unsigned(),
                     "safetensors file '{}': tensor '{}' data_offsets must be [begin, end] with "
                     "non-negative integers, got {}",
                     path, name, offsets.dump());
  info.data_begin = json_u64(offsets[0]);
  info.data_end = json_u64(offsets[1]);
  CTXPAR_CHECK_INPUT(
      info.data_begin <= info.data_end && info.data_end <= data_size,
      "safetensors file '{}': tensor '{}' data_offsets [{}, {}] are not a range inside "
      "the data region of {} bytes",
      path, name, info.data_begin, info.data_end, data_size);
  const uint64_t expected = numel * dtype_size(info.dtype);
  CTXPAR_CHECK_INPUT(
      expected == info.data_end - info.data_begin,
      "safetensors file '{}': tensor '{}' of shape {} and dtype {} needs {} bytes but "
      "data_offsets [{}, {}] span {}",
      path, name, shape.dump(), dname, expected, info.data_begin, info.data_end,
      info.data_end - info.data_begin);
  return info;
}

}  // namespace

std::string_view safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kBF16:
      return "BF16";
    case DType::kF16:
      return "F16";
    case DType::kI32:
      return "I32";
    case DType::kI64:
      return "I64";
    case DType::kU8:
      return "U8";
    case DType::kI8:
      return "I8";
    case DType::kF8E4M3:
      return "F8_E4M3";
  }
  return "unknown";
}

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(path) {
  const size_t file_size = file_.size();
  CTXPAR_CHECK_INPUT(file_size >= 8,
                     "safetensors file '{}' is {} bytes, shorter than the 8-byte header length",
                     path, file_size);
  const uint64_t header_len = read_le_u64(file_.data());
  CTXPAR_CHECK_INPUT(header_len <= kMaxSafetensorsHeaderBytes,
                     "safetensors file '{}': header length {} exceeds the limit of {} bytes", path,
                     header_len, kMaxSafetensorsHeaderBytes);
  CTXPAR_CHECK_INPUT(
      header_len <= file_size - 8,
      "safetensors file '{}': header length {} runs past the end of the file ({} bytes "
      "after the length field)",
      path, header_len, file_size - 8);
  CTXPAR_CHECK_INPUT(header_len >= 2 && file_.data()[8] == '{',
                     "safetensors file '{}': header must be a JSON object starting with '{{'",
                     path);
  data_offset_ = 8 + header_len;
  const uint64_t data_size = file_size - data_offset_;

  const auto* text = reinterpret_cast<const char*>(file_.data() + 8);
  const json header = parse_header_json(text, text + header_len, path);
  CTXPAR_CHECK_INPUT(header.is_object(),
                     "safetensors file '{}': header must be a JSON object, got {}", path,
                     header.type_name());

  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      CTXPAR_CHECK_INPUT(value.is_object(),
                         "safetensors file '{}': __metadata__ must be an object of strings, got {}",
                         path, value.type_name());
      for (const auto& [mk, mv] : value.items()) {
        CTXPAR_CHECK_INPUT(
            mv.is_string(),
            "safetensors file '{}': __metadata__ value of '{}' must be a string, got {}", path, mk,
            mv.dump());
        metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    tensors_.push_back(parse_entry(key, value, data_size, path));
  }

  // The byte ranges must tile [0, data_size) exactly. Sorting by (begin, end) puts empty
  // tensors before a non-empty one at the same offset, where they belong.
  std::sort(tensors_.begin(), tensors_.end(), [](const auto& a, const auto& b) {
    return std::tie(a.data_begin, a.data_end, a.name) < std::tie(b.data_begin, b.data_end, b.name);
  });
  uint64_t expected_begin = 0;
  const SafetensorsTensorInfo* previous = nullptr;
  for (const SafetensorsTensorInfo& t : tensors_) {
    if (t.data_begin != expected_begin) {
      CTXPAR_CHECK_INPUT(previous != nullptr,
                         "safetensors file '{}': the data region starts with a hole: the first "
                         "tensor '{}' begins at byte {}, not 0",
                         path, t.name, t.data_begin);
      CTXPAR_INPUT_FAIL("safetensors file '{}': tensor '{}' [{}, {}) {} tensor '{}' [{}, {})", path,
                        t.name, t.data_begin, t.data_end,
                        t.data_begin < expected_begin ? "overlaps" : "leaves a hole after",
                        previous->name, previous->data_begin, previous->data_end);
    }
    expected_begin = t.data_end;
    previous = &t;
  }
  CTXPAR_CHECK_INPUT(
      expected_begin == data_size,
      "safetensors file '{}': tensors cover {} bytes of the {}-byte data region; the "
      "rest is not indexed",
      path, expected_begin, data_size);

  by_name_.reserve(tensors_.size());
  for (size_t i = 0; i < tensors_.size(); ++i) by_name_.emplace(tensors_[i].name, i);
}

const SafetensorsTensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

const uint8_t* SafetensorsFile::bytes(const SafetensorsTensorInfo& info) const {
  return file_.data() + data_offset_ + info.data_begin;
}

Tensor SafetensorsFile::read(const std::string& name, const Shape& expected_full_shape, DType want,
                             const Slice& slice) const {
  const SafetensorsTensorInfo* info = find(name);
  CTXPAR_CHECK_INPUT(info != nullptr, "tensor '{}' not found in safetensors file '{}'", name,
                     path());
  CTXPAR_CHECK_INPUT(info->shape == expected_full_shape,
                     "tensor '{}' in '{}' has shape {} but the model expects {}", name, path(),
                     shape_str(info->shape), shape_str(expected_full_shape));
  return copy_slice(bytes(*info), info->dtype, info->shape, slice, want, name);
}

void write_safetensors(const std::string& path,
                       const std::vector<std::pair<std::string, Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<Tensor> contiguous;
  contiguous.reserve(tensors.size());
  uint64_t offset = 0;
  for (const auto& [name, tensor] : tensors) {
    CTXPAR_CHECK(tensor.defined(), "write_safetensors '{}': tensor '{}' is undefined", path, name);
    CTXPAR_CHECK(name != "__metadata__" && !header.contains(name),
                 "write_safetensors '{}': tensor name '{}' is reserved or repeated", path, name);
    contiguous.push_back(tensor.contiguous());
    const uint64_t n = contiguous.back().nbytes();
    header[name] = {{"dtype", safetensors_dtype_name(tensor.dtype())},
                    {"shape", tensor.shape()},
                    {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string text = header.dump();
  // Pad with spaces so the data region starts 8-byte aligned, as the reference writer does.
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  CTXPAR_CHECK(out.good(), "write_safetensors: cannot create '{}'", path);
  uint8_t len[8];
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i, n >>= 8) len[i] = static_cast<uint8_t>(n & 0xff);
  out.write(reinterpret_cast<const char*>(len), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const Tensor& t : contiguous) {
    out.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  }
  out.close();
  CTXPAR_CHECK(!out.fail(), "write_safetensors: writing '{}' failed", path);
}

void write_safetensors_index(const std::string& path,
                             const std::map<std::string, std::string>& weight_map) {
  const json index = {{"metadata", json::object()}, {"weight_map", weight_map}};
  std::ofstream out(path, std::ios::trunc);
  CTXPAR_CHECK(out.good(), "write_safetensors_index: cannot create '{}'", path);
  out << index.dump(2) << '\n';
  out.close();
  CTXPAR_CHECK(!out.fail(), "write_safetensors_index: writing '{}' failed", path);
}

}  // namespace ctxpar::model
