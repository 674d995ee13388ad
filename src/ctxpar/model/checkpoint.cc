#include "ctxpar/model/checkpoint.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "ctxpar/core/error.h"
#include "ctxpar/core/fp8.h"

namespace ctxpar::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kIndexName = "model.safetensors.index.json";
constexpr const char* kSingleName = "model.safetensors";

// weight_map of an index file: tensor name → shard file name (relative to the index).
std::map<std::string, std::string> read_weight_map(const std::string& index_path) {
  std::ifstream in(index_path);
  CTXPAR_CHECK_INPUT(in.good(), "cannot read checkpoint index '{}'", index_path);
  std::ostringstream text;
  text << in.rdbuf();
  json index;
  try {
    index = json::parse(text.str());
  } catch (const json::exception& e) {
    CTXPAR_INPUT_FAIL("checkpoint index '{}' is not valid JSON: {}", index_path, e.what());
  }
  CTXPAR_CHECK_INPUT(
      index.is_object() && index.contains("weight_map") && index.at("weight_map").is_object(),
      "checkpoint index '{}' has no 'weight_map' object", index_path);
  std::map<std::string, std::string> weight_map;
  for (const auto& [name, file] : index.at("weight_map").items()) {
    CTXPAR_CHECK_INPUT(file.is_string(),
                       "checkpoint index '{}': weight_map entry '{}' must be a file name, got {}",
                       index_path, name, file.dump());
    const std::string& f = file.get_ref<const std::string&>();
    // Shards live next to the index; a name that climbs out of that folder is refused.
    const fs::path shard(f);
    const bool climbs =
        std::any_of(shard.begin(), shard.end(), [](const fs::path& part) { return part == ".."; });
    CTXPAR_CHECK_INPUT(
        !f.empty() && shard.is_relative() && !climbs,
        "checkpoint index '{}': weight_map entry '{}' names file '{}', which is not a "
        "plain file name next to the index",
        index_path, name, f);
    weight_map.emplace(name, f);
  }
  CTXPAR_CHECK_INPUT(!weight_map.empty(), "checkpoint index '{}' has an empty weight_map",
                     index_path);
  return weight_map;
}

}  // namespace

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string& path) {
  std::error_code ec;
  CTXPAR_CHECK_INPUT(fs::exists(path, ec), "checkpoint path '{}' does not exist", path);
  std::unique_ptr<Checkpoint> ckpt(new Checkpoint(path));

  std::string index_path;
  if (fs::is_directory(path, ec)) {
    const fs::path index = fs::path(path) / kIndexName;
    const fs::path single = fs::path(path) / kSingleName;
    if (fs::is_regular_file(index, ec)) {
      index_path = index.string();
    } else {
      CTXPAR_CHECK_INPUT(fs::is_regular_file(single, ec),
                         "no weights in model directory '{}': expected '{}' or '{}'", path,
                         kIndexName, kSingleName);
      ckpt->add_file(single.string());
      return ckpt;
    }
  } else if (fs::path(path).extension() == ".json") {
    index_path = path;
  } else {
    ckpt->add_file(path);
    return ckpt;
  }

  const std::map<std::string, std::string> weight_map = read_weight_map(index_path);
  const fs::path dir = fs::path(index_path).parent_path();
  std::map<std::string, std::string> shard_paths;  // file name → path, each shard once
  for (const auto& [name, file] : weight_map) shard_paths.emplace(file, (dir / file).string());
  for (const auto& [file, shard] : shard_paths) {
    CTXPAR_CHECK_INPUT(fs::is_regular_file(shard, ec),
                       "checkpoint index '{}' names shard '{}', which does not exist", index_path,
                       shard);
    ckpt->add_file(shard);
  }
  for (const auto& [name, file] : weight_map) {
    auto it = ckpt->tensors_.find(name);
    CTXPAR_CHECK_INPUT(
        it != ckpt->tensors_.end() && it->second.file->path() == shard_paths.at(file),
        "checkpoint index '{}' maps tensor '{}' to '{}', but {}", index_path, name, file,
        it == ckpt->tensors_.end() ? std::string("no shard holds it")
                                   : fmt::format("it is in '{}'", it->second.file->path()));
  }
  return ckpt;
}

void Checkpoint::release_pages() const {
  for (const auto& f : files_) f->release_pages();
}

void Checkpoint::add_file(const std::string& file_path) {
  files_.push_back(std::make_unique<SafetensorsFile>(file_path));
  const SafetensorsFile& file = *files_.back();
  for (const SafetensorsTensorInfo& t : file.tensors()) {
    auto [it, inserted] = tensors_.emplace(t.name, Location{&file, &t});
    CTXPAR_CHECK_INPUT(inserted, "checkpoint '{}': tensor '{}' appears in both '{}' and '{}'",
                       path_, t.name, it->second.file->path(), file.path());
  }
}

const Checkpoint::Location& Checkpoint::locate(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) {
    std::string searched;
    for (const auto& f : files_) searched += (searched.empty() ? "" : ", ") + f->path();
    CTXPAR_INPUT_FAIL("tensor '{}' not found in checkpoint '{}' (searched: {})", name, path_,
                      searched);
  }
  return it->second;
}

bool Checkpoint::has(const std::string& name) const {
  return tensors_.count(name) != 0;
}

const SafetensorsTensorInfo& Checkpoint::info(const std::string& name) const {
  return *locate(name).info;
}

bool Checkpoint::is_fp8(const std::string& name) const {
  auto it = tensors_.find(name);
  return it != tensors_.end() && it->second.info->dtype == DType::kF8E4M3;
}

std::string Checkpoint::scale_name(const std::string& name) const {
  for (const char* suffix : {"_scale_inv", "_scale"}) {
    if (has(name + suffix)) return name + suffix;
  }
  CTXPAR_INPUT_FAIL(
      "tensor '{}' is stored as F8_E4M3 but checkpoint '{}' has neither '{}_scale_inv' "
      "(128×128 block scales, DeepSeek / Qwen FP8) nor '{}_scale' (per tensor, per channel or "
      "per block: compressed-tensors, fbgemm_fp8, AutoFP8) beside it",
      name, path_, name, name);
}

kernels::Fp8Scaling Checkpoint::fp8_scaling(const std::string& name) const {
  const std::string sname = scale_name(name);
  const SafetensorsTensorInfo& si = info(sname);
  const Shape& ws = info(name).shape;
  CTXPAR_CHECK_INPUT(ws.size() == 2, "FP8 tensor '{}' has shape {}; FP8 weights are [out, in]",
                     name, shape_str(ws));
  CTXPAR_CHECK_INPUT(si.dtype == DType::kF32 || si.dtype == DType::kBF16,
                     "'{}' has dtype {}; FP8 scales must be F32 or BF16", sname,
                     safetensors_dtype_name(si.dtype));
  const Shape blocks = kernels::fp8_scale_shape(ws[0], ws[1]);
  int64_t numel = 1;
  for (int64_t d : si.shape) numel *= d;
  const bool inv = sname.ends_with("_scale_inv");
  // The names differ only in who wrote them: `_scale_inv` always holds blocks; `_scale` one
  // scale, one per row, or blocks (compressed-tensors' "block" strategy).
  if (!inv && (numel == 1 || si.shape == Shape{ws[0], 1} || si.shape == Shape{ws[0]}))
    return kernels::Fp8Scaling::kPerRow;
  CTXPAR_CHECK_INPUT(
      si.shape == blocks,
      "'{}' has shape {} but weight '{}' {} needs {}{} (the FP8 kernels run 128×128 blocks{})",
      sname, shape_str(si.shape), name, shape_str(ws), shape_str(blocks),
      inv ? "" : ", [1] (per tensor) or " + shape_str({ws[0], 1}) + " (per channel)",
      inv ? "" : " and per-row scales");
  return kernels::Fp8Scaling::kBlock128;
}

Tensor Checkpoint::read_scale(const std::string& name, const Shape& full_shape, const Slice& slice,
                              kernels::Fp8Scaling scaling) const {
  const std::string sname = scale_name(name);
  const SafetensorsTensorInfo& si = info(sname);
  if (scaling == kernels::Fp8Scaling::kBlock128) {
    Slice block_slice = slice;
    if (slice.kind == Slice::Kind::kPart && slice.size > 1) {
      block_slice = Slice::part(slice.dim, slice.rank, slice.size);  // blocks split like rows
    }
    return get(sname, kernels::fp8_scale_shape(full_shape.at(0), full_shape.at(1)), DType::kF32,
               block_slice);
  }
  // Per row: the slice's rows of [out, 1], or the one per-tensor scale on each of them.
  const SliceExtent e = slice_extent(full_shape, slice, name);
  const int64_t row0 = slice.kind == Slice::Kind::kPart && slice.dim == 0 ? e.source_begin : 0;
  const Tensor all = get(sname, si.shape, DType::kF32, Slice::full());
  Tensor out = Tensor::empty({e.shape[0], 1}, DType::kF32);
  for (int64_t r = 0; r < e.shape[0]; ++r)
    out.data<float>()[r] = all.numel() == 1 ? all.data<float>()[0] : all.data<float>()[row0 + r];
  return out;
}

std::optional<float> Checkpoint::stored_scalar(const std::string& name) const {
  if (!has(name)) return std::nullopt;
  const Shape& shape = info(name).shape;
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  CTXPAR_CHECK_INPUT(numel == 1, "'{}' in checkpoint '{}' has shape {}; it must hold one value",
                     name, path_, shape_str(shape));
  return get(name, shape, DType::kF32, Slice::full()).data<float>()[0];
}

kernels::Fp8Weight Checkpoint::get_fp8(const std::string& name, const Shape& full_shape,
                                       const Slice& slice) const {
  CTXPAR_CHECK(is_fp8(name), "tensor '{}' in checkpoint '{}' is not stored as F8_E4M3", name,
               path_);
  kernels::Fp8Weight w;
  w.scaling = fp8_scaling(name);
  check_fp8_slice(name, full_shape, slice, w.scaling);
  w.weight = locate(name).file->read(name, full_shape, DType::kF8E4M3, slice);
  w.scale_inv = read_scale(name, full_shape, slice, w.scaling);
  return w;
}

Tensor Checkpoint::get(const std::string& name, const Shape& full_shape, DType want,
                       const Slice& slice) const {
  const Location& loc = locate(name);
  if (loc.info->dtype != DType::kF8E4M3 || want == DType::kF8E4M3) {
    return loc.file->read(name, full_shape, want, slice);
  }
  // Dequantize the slice: element (r, c) of the slice is (row0 + r, col0 + c) of the full
  // tensor, whose scale is scale[(row0 + r) / 128][(col0 + c) / 128] (blocks) or
  // scale[row0 + r] (per row).
  CTXPAR_CHECK_INPUT(full_shape.size() == 2 && slice.kind != Slice::Kind::kPaddedPart,
                     "FP8 tensor '{}' {} can be read only as a 2-D weight, whole or in equal parts",
                     name, shape_str(full_shape));
  const Tensor bytes = loc.file->read(name, full_shape, DType::kF8E4M3, slice);
  const kernels::Fp8Scaling scaling = fp8_scaling(name);
  const bool per_row = scaling == kernels::Fp8Scaling::kPerRow;
  const Tensor scale = read_scale(name, full_shape, Slice::full(), scaling);
  const SliceExtent e = slice_extent(full_shape, slice, name);
  const int64_t row0 = slice.kind == Slice::Kind::kPart && slice.dim == 0 ? e.source_begin : 0;
  const int64_t col0 = slice.kind == Slice::Kind::kPart && slice.dim == 1 ? e.source_begin : 0;
  const int64_t rows = bytes.size(0), cols = bytes.size(1), cb = scale.size(1);
  Tensor out = Tensor::empty({rows, cols}, DType::kF32);
  const auto* q = static_cast<const uint8_t*>(bytes.raw());
  for (int64_t r = 0; r < rows; ++r) {
    const float* s =
        scale.data<float>() + (per_row ? row0 + r : (row0 + r) / kernels::kFp8BlockSize * cb);
    for (int64_t c = 0; c < cols; ++c) {
      out.data<float>()[r * cols + c] =
          fp8_e4m3::to_f32(q[r * cols + c]) * s[per_row ? 0 : (col0 + c) / kernels::kFp8BlockSize];
    }
  }
  return want == DType::kF32 ? out : out.to(want);
}

std::vector<std::string> Checkpoint::tensor_names() const {
  std::vector<std::string> names;
  names.reserve(tensors_.size());
  for (const auto& [name, loc] : tensors_) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> Checkpoint::file_paths() const {
  std::vector<std::string> paths;
  for (const auto& f : files_) paths.push_back(f->path());
  return paths;
}

}  // namespace ctxpar::model
