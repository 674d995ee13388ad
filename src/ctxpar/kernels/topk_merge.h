// Merging top-k candidate lists into one top-k, as the sharded sparse-attention indexer does:
// every rank scores only its own keys, keeps its top-k (score, global position) pairs, the
// lists are all-gathered, and every rank merges the same lists into the same global top-k.
//
// Order (the same as topk.h, with the position standing for the column): higher score first,
// NaN below every number, −0 and +0 equal, ties to the lower position. Because each rank's
// list is its top-k in that order, the merge equals topk over the full row of scores.
#pragma once

#include <cstdint>

#include "ctxpar/core/tensor.h"

namespace ctxpar::kernels {

// scores [rows, m] f32 and positions [rows, m] i32 (last dims contiguous): the candidates of
// each row; position -1 marks an empty slot (its score is ignored), others must be >= 0 and
// distinct within a row. k >= 0. indices [rows, k] i32 (preallocated): the positions of the
// top min(k, candidates) in order, then -1. values [rows, k] f32 or null: their scores, then
// -inf. Cost O(m + k log k) per row.
void topk_merge(const Tensor& scores, const Tensor& positions, int64_t k, Tensor& indices,
                Tensor* values);

// The specification as code: a sort of each row's candidates by the order above.
void topk_merge_reference(const Tensor& scores, const Tensor& positions, int64_t k, Tensor& indices,
                          Tensor* values);

}  // namespace ctxpar::kernels
