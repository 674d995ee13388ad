// Elementwise sums over ranks' tensors, the arithmetic of reduce_scatter and all_reduce.
#pragma once

#include <cstdint>
#include <span>

#include "ctxpar/core/tensor.h"

namespace ctxpar {

// For flat (row-major) elements [begin, end): every output = inputs[0] + inputs[1] + ...,
// added in that order so the result does not depend on timing. bf16 accumulates in f32 and
// rounds once; integers wrap around. All tensors share one shape and one summable dtype
// (check_summable); any strides. An output may be one of the inputs: each block of
// elements is read from every input before it is written.
void sum_tensors(std::span<const Tensor* const> inputs, std::span<const Tensor* const> outputs,
                 int64_t begin, int64_t end);

}  // namespace ctxpar
