// The top-k specification as code: stable-sort the valid columns by score (NaN lowest).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "ctxpar/kernels/topk.h"
#include "ctxpar/kernels/topk_checks.h"

namespace ctxpar::kernels {

void topk_reference(const Tensor& scores, int64_t k, const Tensor* valid_len, Tensor& indices,
                    Tensor* values) {
  detail::check_topk_args("topk_reference", scores, k, valid_len, indices, values);
  for (int64_t r = 0; r < scores.size(0); ++r) {
    const int64_t valid = detail::topk_valid_columns(scores, valid_len, r);
    std::vector<int64_t> order(static_cast<size_t>(valid));
    std::iota(order.begin(), order.end(), 0);
    std::vector<double> row(static_cast<size_t>(valid));
    for (int64_t c = 0; c < valid; ++c) row[c] = scores.item_as_double({r, c});
    auto score = [&](int64_t c) { return row[c]; };
    // Strictly-better relation; stable_sort keeps equal scores (and all NaNs) in column order.
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const double sa = score(a), sb = score(b);
      if (std::isnan(sa)) return false;
      if (std::isnan(sb)) return true;
      return sa > sb;
    });
    for (int64_t j = 0; j < k; ++j) {
      const bool used = j < valid;
      indices.data<int32_t>()[r * indices.stride(0) + j * indices.stride(1)] =
          used ? static_cast<int32_t>(order[j]) : -1;
      if (values != nullptr) {
        values->data<float>()[r * values->stride(0) + j * values->stride(1)] =
            used ? static_cast<float>(score(order[j])) : -std::numeric_limits<float>::infinity();
      }
    }
  }
}

}  // namespace ctxpar::kernels
