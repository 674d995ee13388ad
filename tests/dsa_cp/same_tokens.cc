#include "same_tokens.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ctxpar::sfa_test {

std::string token_mismatch(const Generation& got, const Generation& want, double tie_tolerance) {
  if (got.tokens.size() != want.tokens.size()) {
    return fmt::format("{} prompts, want {}", got.tokens.size(), want.tokens.size());
  }
  for (size_t i = 0; i < want.tokens.size(); ++i) {
    if (got.tokens[i].size() != want.tokens[i].size()) {
      return fmt::format("prompt {}: {} tokens, want {}", i, got.tokens[i].size(),
                         want.tokens[i].size());
    }
    for (size_t j = 0; j < want.tokens[i].size(); ++j) {
      const int32_t a = got.tokens[i][j], b = want.tokens[i][j];
      if (a == b) continue;
      const std::string what =
          fmt::format("prompt {} token {}: {} instead of {} (tokens {} vs {})", i, j, a, b,
                      fmt::join(got.tokens[i], ","), fmt::join(want.tokens[i], ","));
      if (tie_tolerance <= 0) return what;
      const std::vector<float>& row = want.logits[i][j];
      const auto [lo, hi] = std::minmax_element(row.begin(), row.end());
      const double scale = std::max(std::fabs(*lo), std::fabs(*hi));
      const double gap = row[static_cast<size_t>(b)] - row[static_cast<size_t>(a)];
      if (gap > tie_tolerance * scale) {
        return fmt::format("{}: the reference's logit gap {} is no near tie (max |logit| {})", what,
                           gap, scale);
      }
      break;
    }
  }
  return "";
}

}  // namespace ctxpar::sfa_test
