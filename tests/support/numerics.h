// Numeric helpers shared by the oracle tests.
#pragma once

#include "ctxpar/core/tensor.h"

namespace ctxpar::test_support {

// ‖a − b‖ / ‖b‖ over all elements of two f32 tensors of one shape (‖a‖ when b is all zero;
// +inf when a holds a NaN).
double relative_error(const Tensor& a, const Tensor& b);

}  // namespace ctxpar::test_support
