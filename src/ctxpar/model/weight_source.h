// WeightSource: where a model's layers get their weights from, by HF tensor name. Two
// implementations: Checkpoint (safetensors files) and DummyWeights (--load-format dummy).
// A layer asks for the full shape it expects and the slice its rank holds; the source
// checks the shape and hands back only that slice, so no rank ever materializes a full
// tensor it does not keep.
#pragma once

#include <string>

#include "ctxpar/core/tensor.h"
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
  virtual Tensor get(const std::string& name, const Shape& full_shape, DType want,
                     const Slice& slice) const = 0;
};

}  // namespace ctxpar::model
