#include "ctxpar/engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "ctxpar/core/error.h"
#include "ctxpar/core/fault_injection.h"
#include "ctxpar/engine/logits_processors.h"

namespace ctxpar::engine {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::string row_label(int64_t row) {
  return row < 0 ? std::string() : fmt::format("row {}: ", row);
}

// The largest of l[0, n) (n >= 1) and whether every value is below +inf (NaN is not). Whole
// runs of kLanes go to independent lane maxima and flags, floats only, each value loaded once:
// the form GCC turns into vector code (a check per logit that could throw kept the loop
// scalar, 0.3% of a decode step for a vocabulary of 128K). The tail past them updates plain
// scalars: updating the lanes there made GCC keep the lane loop scalar too.
struct MaxAndValidity {
  float max;
  bool valid;
};
MaxAndValidity max_and_validity(const float* l, size_t n) {
  constexpr size_t kLanes = 16;
  float best[kLanes], ok[kLanes];
  std::fill(best, best + kLanes, kNegInf);
  std::fill(ok, ok + kLanes, 1.0f);
  size_t v = 0;
  for (; v + kLanes <= n; v += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) {
      const float x = l[v + j];
      ok[j] = std::min(ok[j], x < -kNegInf ? 1.0f : 0.0f);
      best[j] = std::max(best[j], x);
    }
  }
  MaxAndValidity r{*std::max_element(best, best + kLanes),
                   *std::min_element(ok, ok + kLanes) == 1.0f};
  for (; v < n; ++v) {
    r.valid = r.valid && l[v] < -kNegInf;
    r.max = std::max(r.max, l[v]);
  }
  return r;
}

// The largest logit of a row, after checking every logit is finite or -inf and one is finite.
float checked_max_logit(std::span<const float> logits, int64_t row) {
  CTXPAR_CHECK(!logits.empty(), "{}the row of logits is empty; a vocabulary has >= 1 token",
               row_label(row));
  const MaxAndValidity m = max_and_validity(logits.data(), logits.size());
  if (!m.valid) {
    const auto bad =
        std::find_if_not(logits.begin(), logits.end(), [](float x) { return x < -kNegInf; });
    CTXPAR_FAIL("{}the logit of token {} is {}; logits must be finite or -inf (masked)",
                row_label(row), bad - logits.begin(), *bad);
  }
  CTXPAR_CHECK(m.max > kNegInf, "{}all {} logits are -inf; at least one token must be allowed",
               row_label(row), logits.size());
  return m.max;
}

// The lowest id among the tokens whose logit is the row's maximum.
int32_t argmax_lowest_id(std::span<const float> logits, float max_logit) {
  return static_cast<int32_t>(std::find(logits.begin(), logits.end(), max_logit) - logits.begin());
}

// Picks tokens for rows of one vocabulary size, reusing its index scratch across rows.
class TokenPicker {
 public:
  // Token that `u` selects, or every kept token with its probability when `distribution` is
  // given (then u is unused and the return value is -1).
  int32_t pick(std::span<const float> logits, const SamplingParams& params, double u, int64_t row,
               std::vector<TokenProbability>* distribution);

 private:
  // Rank order: higher logit first, ties -> lower id. Kept tokens are a prefix of it.
  struct RankBefore {
    const float* logits;
    bool operator()(int32_t a, int32_t b) const {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    }
  };

  // The last kept token in rank order, or -1 when every token is kept.
  int32_t last_kept(std::span<const float> logits, const SamplingParams& params, float max_logit);

  std::vector<int32_t> order_;       // [vocab] token ids, partially ranked
  std::vector<float> min_p_masked_;  // [vocab] the row with min-p's dropped tokens at -inf
};

// Copies the row with every token below min-p at -inf (the most likely one always stays).
// The same expression as the reference, so both drop the same tokens.
std::span<const float> mask_min_p(std::span<const float> logits, const SamplingParams& params,
                                  float max_logit, std::vector<float>& masked) {
  masked.assign(logits.begin(), logits.end());
  const double min_p = params.min_p;
  for (float& l : masked) {
    if (std::exp((static_cast<double>(l) - max_logit) / params.temperature) < min_p) l = kNegInf;
  }
  return masked;
}

int32_t TokenPicker::last_kept(std::span<const float> logits, const SamplingParams& params,
                               float max_logit) {
  const auto vocab = static_cast<int64_t>(logits.size());
  const RankBefore before{logits.data()};
  const bool top_k = params.top_k > 0 && params.top_k < vocab;
  const bool top_p = params.top_p < 1.0f;
  if (!top_k && !top_p) return -1;

  order_.resize(static_cast<size_t>(vocab));
  std::iota(order_.begin(), order_.end(), 0);
  // Candidates: order_[0, num_candidates), the top-k set (unordered) or everything.
  int64_t num_candidates = vocab;
  if (top_k) {
    num_candidates = params.top_k;
    std::nth_element(order_.begin(), order_.begin() + (num_candidates - 1), order_.end(), before);
    if (!top_p) return order_[static_cast<size_t>(num_candidates - 1)];
  }

  const float inv_t = 1.0f / params.temperature;
  const auto weight = [&](int32_t v) { return std::exp((logits[v] - max_logit) * inv_t); };
  double total = 0.0;
  for (int64_t i = 0; i < num_candidates; ++i) total += weight(order_[static_cast<size_t>(i)]);
  const double target = static_cast<double>(params.top_p) * total;

  // The nucleus is usually a few tokens: rank a growing prefix of the candidates instead of
  // sorting all of them, until the ranked prefix holds the target mass.
  const auto first = order_.begin();
  double mass = 0.0;
  int64_t ranked = 0;
  for (int64_t width = std::min<int64_t>(num_candidates, 64);;
       width = std::min(num_candidates, width * 8)) {
    if (width < num_candidates)
      std::nth_element(first + ranked, first + width, first + num_candidates, before);
    std::sort(first + ranked, first + width, before);
    for (; ranked < width; ++ranked) {
      mass += weight(order_[static_cast<size_t>(ranked)]);
      if (mass >= target) return order_[static_cast<size_t>(ranked)];
    }
    // Rounding can leave the full sum a hair below top_p * total: then everything is kept.
    if (width == num_candidates) return order_[static_cast<size_t>(num_candidates - 1)];
  }
}

int32_t TokenPicker::pick(std::span<const float> logits, const SamplingParams& params, double u,
                          int64_t row, std::vector<TokenProbability>* distribution) {
  const float max_logit = checked_max_logit(logits, row);
  if (params.is_greedy()) {
    const int32_t token = argmax_lowest_id(logits, max_logit);
    if (distribution) distribution->push_back({token, 1.0});
    return distribution ? -1 : token;
  }
  if (params.min_p > 0.0f) logits = mask_min_p(logits, params, max_logit, min_p_masked_);
  const int32_t cut = last_kept(logits, params, max_logit);
  const float cut_logit = cut < 0 ? kNegInf : logits[static_cast<size_t>(cut)];
  const auto kept = [&](int32_t v) {
    const float l = logits[static_cast<size_t>(v)];
    if (l == kNegInf) return false;
    return cut < 0 || l > cut_logit || (l == cut_logit && v <= cut);
  };

  const float inv_t = 1.0f / params.temperature;
  const auto vocab = static_cast<int32_t>(logits.size());
  double total = 0.0;
  for (int32_t v = 0; v < vocab; ++v) {
    if (kept(v)) total += std::exp((logits[static_cast<size_t>(v)] - max_logit) * inv_t);
  }
  if (distribution) {
    for (int32_t v = 0; v < vocab; ++v) {
      if (!kept(v)) continue;
      const double w = std::exp((logits[static_cast<size_t>(v)] - max_logit) * inv_t);
      distribution->push_back({v, w / total});
    }
    return -1;
  }
  // Inverse CDF in id order. `total` >= 1 (the max token weighs exactly 1).
  const double target = u * total;
  double cumulative = 0.0;
  int32_t last_positive = -1;
  for (int32_t v = 0; v < vocab; ++v) {
    if (!kept(v)) continue;
    const double w = std::exp((logits[static_cast<size_t>(v)] - max_logit) * inv_t);
    if (w <= 0.0) continue;
    cumulative += w;
    last_positive = v;
    if (cumulative > target) return v;
  }
  return last_positive;  // u * total rounded up to the full sum
}

}  // namespace

double uniform_variate(std::mt19937_64& generator) {
  return static_cast<double>(generator() >> 11) * 0x1.0p-53;
}

int32_t greedy_token(std::span<const float> logits) {
  return argmax_lowest_id(logits, checked_max_logit(logits, -1));
}

std::vector<TokenProbability> sampling_distribution(std::span<const float> logits,
                                                    const SamplingParams& params) {
  params.validate();
  std::vector<TokenProbability> out;
  TokenPicker().pick(logits, params, 0.0, -1, &out);
  return out;
}

int32_t sample_token(std::span<const float> logits, const SamplingParams& params, double u) {
  params.validate();
  CTXPAR_CHECK(u >= 0.0 && u < 1.0, "uniform variate {} is outside [0, 1)", u);
  return TokenPicker().pick(logits, params, u, -1, nullptr);
}

namespace {

bool allowed(std::span<const uint32_t> mask, size_t v) {
  return v / 32 < mask.size() && ((mask[v / 32] >> (v % 32)) & 1u) != 0;
}

}  // namespace

void apply_token_mask(std::span<const float> raw, std::span<const uint32_t> mask,
                      std::span<float> logits) {
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  bool any_allowed = false;
  bool any_finite = false;
  for (size_t v = 0; v < logits.size(); ++v) {
    if (!allowed(mask, v)) {
      logits[v] = kMasked;
      continue;
    }
    any_allowed = true;
    any_finite = any_finite || std::isfinite(logits[v]);
  }
  if (any_finite) return;
  for (size_t v = 0; v < logits.size(); ++v) {
    if (!any_allowed || allowed(mask, v)) logits[v] = raw[v];
  }
}

Sampler::Sampler() : shared_generator_(std::random_device{}()) {}

Sampler::Sampler(uint64_t shared_seed) : shared_generator_(shared_seed) {}

std::vector<int32_t> Sampler::sample(const Tensor& logits, std::span<const SamplingRow> rows,
                                     ThreadPool* pool) {
  inject_test_fault(FaultPoint::kSampler, 0, num_calls_++);  // only rank 0 samples
  CTXPAR_CHECK(logits.dtype() == DType::kF32 && logits.ndim() == 2,
               "logits are {}; the sampler takes float32 [num_rows, vocab]", logits.describe());
  const int64_t num_rows = logits.size(0);
  const int64_t vocab = logits.size(1);
  CTXPAR_CHECK(num_rows == static_cast<int64_t>(rows.size()),
               "logits have {} rows but {} sampling rows were given; one per row", num_rows,
               rows.size());
  CTXPAR_CHECK(vocab >= 1 && logits.stride(1) == 1,
               "logits {} need a vocab of >= 1 with unit stride along it", logits.describe());

  // Draw first, in row order, so the shared generator's sequence does not depend on threads.
  std::vector<double> u(rows.size(), 0.0);
  for (size_t i = 0; i < rows.size(); ++i) {
    CTXPAR_CHECK(rows[i].params != nullptr, "sampling row {} has no params", i);
    rows[i].params->validate();
    if (rows[i].params->is_greedy()) continue;
    u[i] = uniform_variate(rows[i].generator ? *rows[i].generator : shared_generator_);
  }

  std::vector<int32_t> tokens(rows.size());
  const float* base = logits.data<float>();
  const int64_t row_stride = logits.stride(0);
  const int num_threads = pool ? pool->num_threads() : 1;
  std::vector<TokenPicker> pickers(static_cast<size_t>(num_threads));
  std::vector<std::vector<float>> processed(static_cast<size_t>(num_threads));
  const auto run_row = [&](int64_t i, int thread) {
    std::span<const float> row(base + i * row_stride, static_cast<size_t>(vocab));
    const auto r = static_cast<size_t>(i);
    const SamplingRow& sr = rows[r];
    const bool processors =
        changes_logits(*sr.params, static_cast<int64_t>(sr.output_token_ids.size()));
    if (processors || !sr.allowed_tokens.empty()) {
      std::vector<float>& copy = processed[static_cast<size_t>(thread)];
      copy.assign(row.begin(), row.end());
      if (processors) {
        apply_logits_processors(copy, *sr.params, sr.prompt_token_ids, sr.output_token_ids);
        // Bans that leave nothing (allowed_token_ids all held back by min_tokens or bad_words)
        // cannot be met: the allowed tokens keep their raw logits rather than the step failing.
        if (std::none_of(copy.begin(), copy.end(), [](float x) { return x > kNegInf; })) {
          copy.assign(row.begin(), row.end());
          SamplingParams allowed_only;
          allowed_only.allowed_token_ids = sr.params->allowed_token_ids;
          apply_logits_processors(copy, allowed_only, {}, {});
        }
      }
      if (!sr.allowed_tokens.empty()) apply_token_mask(row, sr.allowed_tokens, copy);
      row = copy;
    }
    tokens[r] = pickers[static_cast<size_t>(thread)].pick(row, *sr.params, u[r], i, nullptr);
  };
  if (pool) {
    pool->run(num_rows, run_row);
  } else {
    for (int64_t i = 0; i < num_rows; ++i) run_row(i, 0);
  }
  return tokens;
}

}  // namespace ctxpar::engine
