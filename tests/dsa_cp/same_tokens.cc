#include "same_tokens.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ctxpar/core/error.h"
#include "numerics.h"

namespace ctxpar::sfa_test {
namespace {

struct RowDeviation {
  double relative = 0;  // max |got - want| / max |want| over the row
  double scale = 0;     // max |want|
};

RowDeviation row_deviation(const std::vector<float>& got, const std::vector<float>& want) {
  CTXPAR_CHECK(got.size() == want.size(), "logits rows of {} and {} entries", got.size(),
               want.size());
  RowDeviation d;
  double diff = 0;
  for (size_t v = 0; v < want.size(); ++v) {
    d.scale = std::max(d.scale, static_cast<double>(std::fabs(want[v])));
    diff = std::max(diff, static_cast<double>(std::fabs(got[v] - want[v])));
  }
  d.relative = diff / std::max(d.scale, 1e-30);
  return d;
}

std::string shape_mismatch(const Generation& got, const Generation& want) {
  if (got.tokens.size() != want.tokens.size()) {
    return fmt::format("{} prompts, want {}", got.tokens.size(), want.tokens.size());
  }
  for (size_t i = 0; i < want.tokens.size(); ++i) {
    if (got.tokens[i].size() != want.tokens[i].size() ||
        got.logits[i].size() != want.logits[i].size()) {
      return fmt::format("prompt {}: {} tokens, want {}", i, got.tokens[i].size(),
                         want.tokens[i].size());
    }
  }
  return "";
}

// The lowest id among the largest entries.
int32_t argmax(const std::vector<float>& row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

}  // namespace

std::string token_mismatch(const Generation& got, const Generation& want) {
  if (std::string shape = shape_mismatch(got, want); !shape.empty()) return shape;
  for (size_t i = 0; i < want.tokens.size(); ++i) {
    if (got.tokens[i] != want.tokens[i]) {
      return fmt::format("prompt {}: tokens {} instead of {}", i, fmt::join(got.tokens[i], ","),
                         fmt::join(want.tokens[i], ","));
    }
  }
  return "";
}

std::string logits_mismatch(const Generation& got, const Generation& want, double tolerance) {
  if (std::string shape = shape_mismatch(got, want); !shape.empty()) return shape;
  if (got.tokens != want.tokens) return "got did not run with want's tokens forced";
  for (size_t i = 0; i < want.logits.size(); ++i) {
    for (size_t j = 0; j < want.logits[i].size(); ++j) {
      const std::vector<float>&a = got.logits[i][j], &b = want.logits[i][j];
      const int32_t top_a = argmax(a), top_b = argmax(b);
      if (test_support::logit_rank(b, top_a) >= kTopLogits ||
          test_support::logit_rank(a, top_b) >= kTopLogits) {
        return fmt::format(
            "prompt {} token {}: argmax {} (rank {} in the reference) vs the reference's {} "
            "(rank {} here); both must lie in the other's top {}",
            i, j, top_a, test_support::logit_rank(b, top_a), top_b,
            test_support::logit_rank(a, top_b), kTopLogits);
      }
    }
  }
  const double median = median_row_deviation(got, want);
  if (median > tolerance) {
    return fmt::format("the median logits row is off by {:.3g} of max |logit| (bound {})", median,
                       tolerance);
  }
  return "";
}

double median_row_deviation(const Generation& got, const Generation& want) {
  if (std::string shape = shape_mismatch(got, want); !shape.empty()) CTXPAR_FAIL("{}", shape);
  std::vector<double> deviations;
  for (size_t i = 0; i < want.logits.size(); ++i) {
    for (size_t j = 0; j < want.logits[i].size(); ++j) {
      deviations.push_back(row_deviation(got.logits[i][j], want.logits[i][j]).relative);
    }
  }
  if (deviations.empty()) return 0;
  std::nth_element(deviations.begin(), deviations.begin() + deviations.size() / 2,
                   deviations.end());
  return deviations[deviations.size() / 2];
}

}  // namespace ctxpar::sfa_test
