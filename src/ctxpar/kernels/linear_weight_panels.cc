#include "ctxpar/kernels/linear_weight_panels.h"

#include <algorithm>
#include <vector>

#include "ctxpar/core/error.h"

namespace ctxpar::kernels::detail {
namespace {

// f32 elements of one panel: big enough for sgemm to run efficiently, small enough to stay
// in L2/L3 while sgemm reads it.
constexpr int64_t kPanelElements = int64_t{1} << 20;

void convert_rows(const void* w, DType w_type, int64_t ldw, int64_t row0, int64_t rows, int64_t k,
                  float* panel) {
  for (int64_t r = 0; r < rows; ++r) {
    float* dst = panel + r * k;
    if (w_type == DType::kBF16) {
      const bf16* src = static_cast<const bf16*>(w) + (row0 + r) * ldw;
      for (int64_t i = 0; i < k; ++i) dst[i] = bf16::to_f32(src[i].bits);
    } else {
      const int8_t* src = static_cast<const int8_t*>(w) + (row0 + r) * ldw;
      for (int64_t i = 0; i < k; ++i) dst[i] = static_cast<float>(src[i]);
    }
  }
}

}  // namespace

void matmul_converted_weight_panels(const MatmulCache& cache, const float* a, int64_t lda,
                                    int64_t m, int64_t k, const void* w, DType w_type, int64_t ldw,
                                    int64_t n, const float* bias, const float* column_scales,
                                    float* c, int64_t ldc) {
  CTXPAR_CHECK(w_type == DType::kBF16 || w_type == DType::kI8,
               "converted weight panels take bfloat16 or int8 weights, got {}", dtype_name(w_type));
  // Whole rows, a multiple of 16 of them, at least 16.
  const int64_t panel_rows = std::min(n, std::max<int64_t>(16, kPanelElements / k / 16 * 16));
  thread_local std::vector<float> panel;
  panel.resize(static_cast<size_t>(panel_rows * k));
  for (int64_t o0 = 0; o0 < n; o0 += panel_rows) {
    const int64_t rows = std::min(panel_rows, n - o0);
    convert_rows(w, w_type, ldw, o0, rows, k, panel.data());
    MatmulShape s;
    s.m = m;
    s.k = k;
    s.n = rows;
    s.lda = lda;
    s.ldw = k;
    s.ldc = ldc;
    s.has_bias = bias != nullptr;
    s.has_column_scales = column_scales != nullptr;
    cache.run(s, a, panel.data(), bias ? bias + o0 : nullptr,
              column_scales ? column_scales + o0 : nullptr, c + o0);
  }
}

}  // namespace ctxpar::kernels::detail
