#include "ctxpar/engine/logprobs.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>

#include "ctxpar/core/error.h"

namespace ctxpar::engine {
namespace {

// Up to this many top tokens are kept in one pass; more sort the ids.
constexpr int32_t kSmallTop = 64;

// exp(x) for x <= 0 to a few float ulps (2^x as 2^⌊·⌋ times a degree-6 polynomial of the
// fraction), in code the compiler vectorizes: a logits row is 128K terms, and std::exp one at
// a time is most of the cost of prompt logprobs.
inline float exp_nonpositive(float x) {
  const float t = (x < -86.0f ? -86.0f : x) * 1.44269504088896341f;  // log2(e)
  const auto whole = static_cast<int32_t>(t);                        // toward 0: t <= 0
  const int32_t floor_t = whole - static_cast<int32_t>(static_cast<float>(whole) > t);
  const float f = t - static_cast<float>(floor_t);  // [0, 1)
  float p = 1.535336188319500e-4f;
  p = p * f + 1.339887440266574e-3f;
  p = p * f + 9.618437357674640e-3f;
  p = p * f + 5.550332471162809e-2f;
  p = p * f + 2.402264791363012e-1f;
  p = p * f + 6.931472028550421e-1f;
  p = p * f + 1.0f;
  return p * std::bit_cast<float>(static_cast<uint32_t>(floor_t + 127) << 23);
}

// The largest of `row` (not empty), in lanes the compiler keeps in vectors.
float max_of(std::span<const float> row) {
  float lanes[8];
  for (float& v : lanes) v = row[0];
  size_t i = 0;
  for (; i + 8 <= row.size(); i += 8) {
    for (size_t j = 0; j < 8; ++j) lanes[j] = row[i + j] > lanes[j] ? row[i + j] : lanes[j];
  }
  float m = row[0];
  for (; i < row.size(); ++i) m = row[i] > m ? row[i] : m;
  for (const float v : lanes) m = v > m ? v : m;
  return m;
}

// Σ exp(x[i] - m) for x[i] <= m: the terms in float, a block at a time (a loop the compiler
// vectorizes), summed in double.
double sum_exp(const float* x, int64_t n, float m) {
  constexpr int64_t kBlock = 256;
  float terms[kBlock];
  double sum = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t nb = std::min(kBlock, n - b);
    for (int64_t i = 0; i < nb; ++i) terms[i] = exp_nonpositive(x[b + i] - m);
    for (int64_t i = nb; i < kBlock; ++i) terms[i] = 0;
    // Eight lanes of 32 terms in (0, 1] each: a few float ulps of rounding.
    float lanes[8] = {};
    for (int64_t i = 0; i < kBlock; i += 8) {
      for (int j = 0; j < 8; ++j) lanes[j] += terms[i + j];
    }
    for (const float v : lanes) sum += v;
  }
  return sum;
}

}  // namespace

SampledLogprobs token_logprobs(std::span<const float> logits, int32_t token, int32_t num_top) {
  const auto vocab = static_cast<int64_t>(logits.size());
  CTXPAR_CHECK(token >= 0 && token < vocab, "token {} is outside the vocabulary [0, {})", token,
               vocab);
  CTXPAR_CHECK(num_top >= 0 && num_top <= vocab, "{} top logprobs asked of a vocabulary of {}",
               num_top, vocab);
  // log_softmax(l)_v = l_v - (m + log Σ exp(l - m)), m the largest logit: terms in (0, 1]
  // to a few float ulps each (far below what a float logprob shows), summed in double.
  const float m = max_of(logits);
  const double log_z = m + std::log(sum_exp(logits.data(), vocab, m));
  const auto logprob = [&](int32_t v) {
    return static_cast<float>(static_cast<double>(logits[static_cast<size_t>(v)]) - log_z);
  };

  SampledLogprobs out;
  out.sampled = {token, logprob(token)};
  const float own = logits[static_cast<size_t>(token)];
  out.rank = 1 + std::count_if(logits.begin(), logits.end(), [&](float l) { return l > own; });
  if (num_top == 0) return out;
  const auto before = [&](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  };
  std::vector<int32_t> ids;
  if (num_top <= kSmallTop) {
    // One pass keeping the best num_top ids sorted; a logit below the worst kept one (nearly
    // every logit) costs one comparison.
    // Blocks whose largest logit is not above the worst kept one are skipped whole (ids only
    // grow, so a tie never displaces a kept id).
    ids.reserve(static_cast<size_t>(num_top) + 1);
    float worst = -std::numeric_limits<float>::infinity();
    constexpr int32_t kBlock = 16;
    for (int32_t b = 0; b < vocab; b += kBlock) {
      const int32_t end = std::min<int32_t>(b + kBlock, static_cast<int32_t>(vocab));
      if (static_cast<int32_t>(ids.size()) == num_top &&
          max_of(logits.subspan(static_cast<size_t>(b), static_cast<size_t>(end - b))) <= worst) {
        continue;
      }
      for (int32_t v = b; v < end; ++v) {
        if (static_cast<int32_t>(ids.size()) == num_top && !before(v, ids.back())) continue;
        ids.insert(std::upper_bound(ids.begin(), ids.end(), v, before), v);
        if (static_cast<int32_t>(ids.size()) > num_top) ids.pop_back();
        if (static_cast<int32_t>(ids.size()) == num_top) {
          worst = logits[static_cast<size_t>(ids.back())];
        }
      }
    }
  } else {
    ids.resize(static_cast<size_t>(vocab));
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + num_top, ids.end(), before);
  }
  out.top.reserve(static_cast<size_t>(num_top));
  for (int32_t i = 0; i < num_top; ++i)
    out.top.push_back({ids[static_cast<size_t>(i)], logprob(ids[static_cast<size_t>(i)])});
  return out;
}

}  // namespace ctxpar::engine
