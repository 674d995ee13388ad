// Fast Walsh–Hadamard transform, as used to rotate activations before quantization or
// low-precision scoring (e.g. the DeepSeek-V3.2 indexer's q/k rotation).
#pragma once

#include "ctxpar/core/tensor.h"

namespace ctxpar::kernels {

// x [..., n] f32, n a power of two (1 included), last dim contiguous, leading dims any
// strides: each row becomes H_n · row in place, H_n the Sylvester Hadamard matrix
// (H_1 = [1], H_2n = [[H_n, H_n], [H_n, −H_n]], entry (i, j) = (−1)^popcount(i & j)), times
// 1/sqrt(n) when normalize (then the transform is orthonormal and its own inverse).
// O(n log n) per row.
void hadamard_transform(Tensor& x, bool normalize);

}  // namespace ctxpar::kernels
