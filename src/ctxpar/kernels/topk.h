// Top-k selection per row, as the sparse-attention indexer and samplers need it.
#pragma once

#include <cstdint>

#include "ctxpar/core/tensor.h"

namespace ctxpar::kernels {

// scores [rows, n] f32 (last dim contiguous, rows may be strided). valid_len [rows] int32 or
// null: only the first valid_len[r] columns of row r compete (each in [0, n], else Error).
// k >= 0; row r selects k' = min(k, valid) columns.
// indices [rows, k] int32 (preallocated): the selected columns in descending score order, ties
// broken by the lower column; entries k'..k-1 are -1. values [rows, k] f32 or null: the
// selected scores, -inf in the unused tail.
// Order: NaN ranks below every number (−inf included); −0 and +0 tie. The result is exact and
// deterministic: equal to topk_reference on every input. Cost O(n + k' log k') per row.
void topk(const Tensor& scores, int64_t k, const Tensor* valid_len, Tensor& indices,
          Tensor* values);

// The specification as code: a stable sort of the valid columns by that order.
void topk_reference(const Tensor& scores, int64_t k, const Tensor* valid_len, Tensor& indices,
                    Tensor* values);

}  // namespace ctxpar::kernels
