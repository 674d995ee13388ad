// WeightSource: where a model's layers get their weights from, by HF tensor name. Two
// implementations: Checkpoint (safetensors files) and DummyWeights (--load-format dummy).
// A layer asks for the full shape it expects and the slice its rank holds; the source
// checks the shape and hands back only that slice, so no rank ever materializes a full
// tensor it does not keep.
#pragma once

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
  // A block-scaled FP8 tensor (stored F8_E4M3 with a `<name>_scale_inv` sibling) is
  // dequantized to `want` (any slice).
  virtual Tensor get(const std::string& name, const Shape& full_shape, DType want,
                     const Slice& slice) const = 0;

  // Whether `name` is stored as block-scaled FP8 (float8_e4m3fn with a 128×128
  // `<name>_scale_inv`), so a linear can keep it FP8 (get_fp8).
  virtual bool is_fp8(const std::string& /*name*/) const { return false; }
  // The slice of an FP8 tensor as stored: e4m3 bytes and the matching rows / columns of its
  // scale_inv (converted to f32). The slice must cut on 128-blocks: a part's extent along the
  // split dimension must be a multiple of 128 (or the whole dimension). Throws Error naming
  // the tensor, the numbers and the valid part counts otherwise, or when the scale is missing
  // or mis-shaped.
  virtual kernels::Fp8Weight get_fp8(const std::string& name, const Shape& full_shape,
                                     const Slice& slice) const;

  // Gives back memory held only for reading (a checkpoint's mapped pages) once the model has
  // copied its weights out; every method above keeps working (pages are read again).
  virtual void release_pages() const {}
};

// Throws Error unless `slice` of a [rows, cols] FP8 tensor named `name` cuts on 128-blocks
// (see WeightSource::get_fp8); the message lists the part counts that would.
void check_fp8_slice(const std::string& name, const Shape& full_shape, const Slice& slice);

}  // namespace ctxpar::model
