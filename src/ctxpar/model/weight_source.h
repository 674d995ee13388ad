// WeightSource: where a model's layers get their weights from, by HF tensor name. Two
// implementations: Checkpoint (safetensors files) and DummyWeights (--load-format dummy).
// A layer asks for the full shape it expects and the slice its rank holds; the source
// checks the shape and hands back only that slice, so no rank ever materializes a full
// tensor it does not keep.
#pragma once

#include <optional>
#include <string>

#include "ctxpar/core/tensor.h"
#include "ctxpar/kernels/linear_fp8.h"
#include "ctxpar/model/weight_slice.h"

namespace ctxpar::model {

class WeightSource {
 public:
  virtual ~WeightSource() = default;

  // Whether a tensor of this name exists (e.g. an optional bias, or lm_head.weight when
  // embeddings may be tied).
  virtual bool has(const std::string& name) const = 0;

  // The slice of tensor `name` as a new owning, contiguous tensor of dtype `want` and shape
  // slice_extent(full_shape, slice).shape. Throws Error naming the tensor when it is
  // missing, its stored shape differs from full_shape, its dtype cannot convert to `want`,
  // or the slice does not fit. Safe to call from several threads (ranks) at once.
  // An FP8 tensor (stored F8_E4M3 with a scale sibling, see is_fp8) is dequantized to `want`
  // (any slice).
  virtual Tensor get(const std::string& name, const Shape& full_shape, DType want,
                     const Slice& slice) const = 0;

  // Whether `name` is stored as FP8 (float8_e4m3fn with a scale sibling), so a linear can
  // keep it FP8 (get_fp8). The sibling is `<name>_scale_inv` [ceil(out/128), ceil(in/128)]
  // (DeepSeek / Qwen block FP8), or `<name>_scale` (compressed-tensors, fbgemm_fp8, AutoFP8:
  // [1] per tensor, [out, 1] per channel, or the block shape); both multiply.
  virtual bool is_fp8(const std::string& /*name*/) const { return false; }
  // How an FP8 tensor's scales map onto it: per tensor and per channel read as kPerRow (a
  // per-tensor scale repeated on every row). Throws Error naming the scale tensor when it is
  // missing or its shape fits none of the layouts.
  virtual kernels::Fp8Scaling fp8_scaling(const std::string& name) const;
  // The slice of an FP8 tensor as stored: e4m3 bytes and the matching rows / columns of its
  // scales (converted to f32, shaped by its scaling). Block scales need the slice to cut on
  // 128-blocks: a part's extent along the split dimension must be a multiple of 128 (or the
  // whole dimension). Throws Error naming the tensor, the numbers and the valid part counts
  // otherwise, or when the scale is missing or mis-shaped.
  virtual kernels::Fp8Weight get_fp8(const std::string& name, const Shape& full_shape,
                                     const Slice& slice) const;

  // A one-element tensor stored under `name` ([], [1], [1, 1], any float dtype) as f32;
  // nullopt when the source stores no such tensor (dummy weights store none: every name
  // "exists" there, but a made-up scale would be no scale at all). Throws Error naming the
  // tensor when it holds more than one value.
  virtual std::optional<float> stored_scalar(const std::string& /*name*/) const {
    return std::nullopt;
  }

  // Gives back memory held only for reading (a checkpoint's mapped pages) once the model has
  // copied its weights out; every method above keeps working (pages are read again).
  virtual void release_pages() const {}
};

// Throws Error unless `slice` of a [rows, cols] FP8 tensor named `name` is whole or equal parts
// along dim 0 or 1 and, for block scales, cuts on 128-blocks (see WeightSource::get_fp8); the
// message lists the part counts that would.
void check_fp8_slice(const std::string& name, const Shape& full_shape, const Slice& slice,
                     kernels::Fp8Scaling scaling = kernels::Fp8Scaling::kBlock128);

}  // namespace ctxpar::model
