// Internal to topk: argument checks shared by the kernel and its reference.
#pragma once

#include <cstdint>

#include "ctxpar/core/tensor.h"

namespace ctxpar::kernels::detail {

// Throws Error unless the shapes/dtypes match topk's contract (see topk.h).
void check_topk_args(const char* op, const Tensor& scores, int64_t k, const Tensor* valid_len,
                     const Tensor& indices, const Tensor* values);

// The number of columns of row r that compete: valid_len[r] (checked to lie in [0, n]) or n.
int64_t topk_valid_columns(const Tensor& scores, const Tensor* valid_len, int64_t r);

}  // namespace ctxpar::kernels::detail
