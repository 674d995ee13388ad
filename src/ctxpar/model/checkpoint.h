// Checkpoint: the safetensors weights of a model, as a WeightSource.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ctxpar/model/safetensors.h"
#include "ctxpar/model/weight_source.h"

namespace ctxpar::model {

class Checkpoint : public WeightSource {
 public:
  // `path` is one of:
  // - a directory with model.safetensors.index.json (its weight_map names the shard of each
  //   tensor) or, failing that, a single model.safetensors;
  // - a .safetensors file;
  // - an index .json file (shards resolved next to it).
  // Every file is mapped and validated (SafetensorsFile) before this returns. Throws Error
  // naming the path when no weights are found, a shard is missing, the index is malformed
  // or disagrees with the shards, or a tensor name appears in two shards.
  static std::unique_ptr<Checkpoint> open(const std::string& path);

  bool has(const std::string& name) const override;
  // Slice of tensor `name`, see WeightSource::get. A missing tensor's Error names it and
  // the files searched.
  Tensor get(const std::string& name, const Shape& full_shape, DType want,
             const Slice& slice) const override;
  // F8_E4M3, with a `<name>_scale_inv` or `<name>_scale` (F32 or BF16, possibly in another
  // shard; see fp8_scaling).
  bool is_fp8(const std::string& name) const override;
  kernels::Fp8Scaling fp8_scaling(const std::string& name) const override;
  kernels::Fp8Weight get_fp8(const std::string& name, const Shape& full_shape,
                             const Slice& slice) const override;

  std::optional<float> stored_scalar(const std::string& name) const override;

  // The stored description of a tensor (dtype, shape); throws like get() when missing.
  const SafetensorsTensorInfo& info(const std::string& name) const;
  std::vector<std::string> tensor_names() const;  // sorted
  std::vector<std::string> file_paths() const;
  const std::string& path() const { return path_; }
  // Drops every shard's touched pages from this process (MappedFile::release_pages).
  void release_pages() const override;

 private:
  struct Location {
    const SafetensorsFile* file;
    const SafetensorsTensorInfo* info;
  };

  explicit Checkpoint(std::string path) : path_(std::move(path)) {}
  void add_file(const std::string& file_path);
  const Location& locate(const std::string& name) const;
  // The sibling holding FP8 tensor `name`'s scales; throws naming both candidates if none.
  std::string scale_name(const std::string& name) const;
  // The f32 scale_inv of FP8 tensor `name` of full_shape for `slice`, shaped as
  // kernels::fp8_scale_shape of the slice with `scaling` (fp8_scaling(name)).
  Tensor read_scale(const std::string& name, const Shape& full_shape, const Slice& slice,
                    kernels::Fp8Scaling scaling) const;

  std::string path_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::unordered_map<std::string, Location> tensors_;
};

}  // namespace ctxpar::model
