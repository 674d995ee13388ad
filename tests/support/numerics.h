// Numeric helpers shared by the oracle tests.
#pragma once

#include <cstdint>
#include <vector>

#include "ctxpar/core/tensor.h"

namespace ctxpar::test_support {

// ‖a − b‖ / ‖b‖ over all elements of two f32 tensors of one shape (‖a‖ when b is all zero;
// +inf when a holds a NaN).
double relative_error(const Tensor& a, const Tensor& b);

// How many entries of a logits row exceed row[id] (0: id is a top entry); id must index the
// row (checked).
int64_t logit_rank(const std::vector<float>& row, int32_t id);

}  // namespace ctxpar::test_support
