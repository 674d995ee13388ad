#include "numerics.h"

#include <algorithm>
#include <cmath>

#include "ctxpar/core/error.h"

namespace ctxpar::test_support {

double relative_error(const Tensor& a, const Tensor& b) {
  CTXPAR_CHECK(a.shape() == b.shape(), "relative_error: {} vs {}", a.describe(), b.describe());
  double num = 0, den = 0;
  const Tensor ac = a.contiguous(), bc = b.contiguous();
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = ac.data<float>()[i], y = bc.data<float>()[i];
    num += (x - y) * (x - y);
    den += y * y;
  }
  if (std::isnan(num)) return INFINITY;
  return den == 0 ? std::sqrt(num) : std::sqrt(num / den);
}

int64_t logit_rank(const std::vector<float>& row, int32_t id) {
  CTXPAR_CHECK(id >= 0 && static_cast<size_t>(id) < row.size(), "logit_rank: id {} of a row of {}",
               id, row.size());
  const float v = row[static_cast<size_t>(id)];
  return std::count_if(row.begin(), row.end(), [v](float x) { return x > v; });
}

}  // namespace ctxpar::test_support
