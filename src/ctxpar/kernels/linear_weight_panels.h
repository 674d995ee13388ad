// Internal to the linear kernels: C = A · Wᵀ for weights stored in a narrow type (bf16 or
// int8) that oneDNN cannot multiply natively on this CPU. W is converted to f32 one panel of
// whole rows at a time into a per-thread, cache-sized buffer that sgemm then reads: never a
// second copy of W, and the conversion (n·k) amortizes over the m rows of A.
#pragma once

#include <cstdint>

#include "ctxpar/core/dtype.h"
#include "ctxpar/kernels/linear_matmul_cache.h"

namespace ctxpar::kernels::detail {

// a [m, k] f32 (row stride lda), w [n, k] of w_type bf16 or int8 (row stride ldw), bias [n]
// f32 or null, column_scales [n] f32 or null (C[:, j] *= scale[j] before the bias), c [m, n]
// f32 (row stride ldc). Accumulates in f32: products of bf16 or int8 values are exact in f32,
// their sums round as any f32 GEMM does.
void matmul_converted_weight_panels(const MatmulCache& cache, const float* a, int64_t lda,
                                    int64_t m, int64_t k, const void* w, DType w_type, int64_t ldw,
                                    int64_t n, const float* bias, const float* column_scales,
                                    float* c, int64_t ldc);

}  // namespace ctxpar::kernels::detail
