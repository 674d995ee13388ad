// allowed_token_ids, logit_bias, min_tokens masking and the repetition / frequency / presence
// penalties against the formulas vLLM documents, and the sampler applying them to a copy of the
// row.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ctxpar/core/tensor.h"
#include "ctxpar/engine/logits_processors.h"
#include "ctxpar/engine/sampler.h"
#include "support/seeded_rng.h"

namespace ctxpar::engine {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}
float uniform_float(std::mt19937_64& rng, float lo, float hi) {
  return std::uniform_real_distribution<float>(lo, hi)(rng);
}

std::vector<int32_t> random_ids(std::mt19937_64& rng, int64_t n, int64_t vocab) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& t : ids) t = static_cast<int32_t>(uniform(rng, 0, vocab - 1));
  return ids;
}

// The presence penalty alone, as its formula says (for the bad_words test's expected row).
void apply_penalties_for_test(std::vector<float>& logits, const SamplingParams& p,
                              const std::vector<int32_t>& output) {
  const std::set<int32_t> seen(output.begin(), output.end());
  for (const int32_t t : seen) logits[size_t(t)] -= p.presence_penalty;
}

TEST(LogitsProcessors, PenaltiesFollowTheirFormulas) {
  SEEDED_RNG(rng);
  for (int trial = 0; trial < 100; ++trial) {
    const int64_t vocab = uniform(rng, 1, 400);
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (float& l : logits) l = uniform_float(rng, -6.0f, 6.0f);
    const auto prompt = random_ids(rng, uniform(rng, 0, 30), vocab);
    const auto output = random_ids(rng, uniform(rng, 0, 30), vocab);
    SamplingParams p;
    p.repetition_penalty = uniform(rng, 0, 3) == 0 ? 1.0f : uniform_float(rng, 0.2f, 3.0f);
    p.frequency_penalty = uniform(rng, 0, 3) == 0 ? 0.0f : uniform_float(rng, -2.0f, 2.0f);
    p.presence_penalty = uniform(rng, 0, 3) == 0 ? 0.0f : uniform_float(rng, -2.0f, 2.0f);
    std::vector<float> got = logits;
    apply_logits_processors(got, p, prompt, output);

    std::map<int32_t, int> count;
    for (const int32_t t : output) ++count[t];
    const std::set<int32_t> seen_prompt(prompt.begin(), prompt.end());
    for (int32_t v = 0; v < vocab; ++v) {
      double want = logits[size_t(v)];
      const int c = count.count(v) ? count[v] : 0;
      if (seen_prompt.count(v) || c > 0) {
        want = want > 0 ? want / p.repetition_penalty : want * p.repetition_penalty;
      }
      if (c > 0) want -= double(p.frequency_penalty) * c + p.presence_penalty;
      EXPECT_NEAR(got[size_t(v)], want, 1e-4 * (1 + std::abs(want))) << "token " << v;
    }
    EXPECT_EQ(
        changes_logits(p, static_cast<int64_t>(output.size())),
        p.repetition_penalty != 1.0f || p.frequency_penalty != 0.0f || p.presence_penalty != 0.0f);
  }
}

// allowed_token_ids and logit_bias come first, so a bias can change which side of 0 a logit is
// on before the repetition penalty divides or multiplies it.
TEST(LogitsProcessors, AllowedTokensAndBiasBeforeThePenalties) {
  SEEDED_RNG(rng);
  for (int trial = 0; trial < 100; ++trial) {
    const int64_t vocab = uniform(rng, 1, 300);
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (float& l : logits) l = uniform_float(rng, -6.0f, 6.0f);
    const auto prompt = random_ids(rng, uniform(rng, 0, 20), vocab);
    SamplingParams p;
    p.repetition_penalty = uniform_float(rng, 0.5f, 2.0f);
    std::map<int32_t, double> bias;
    for (int64_t k = uniform(rng, 0, 8); k > 0; --k) {
      const auto t = static_cast<int32_t>(uniform(rng, 0, vocab - 1));
      if (bias.count(t)) continue;
      bias[t] = uniform_float(rng, -100.0f, 100.0f);
      p.logit_bias.emplace_back(t, static_cast<float>(bias[t]));
    }
    std::set<int32_t> allowed;
    if (trial % 2 == 0) {
      p.allowed_token_ids = random_ids(rng, uniform(rng, 1, 10), vocab);
      allowed.insert(p.allowed_token_ids.begin(), p.allowed_token_ids.end());
    }
    std::vector<float> got = logits;
    apply_logits_processors(got, p, prompt, {});
    const std::set<int32_t> seen(prompt.begin(), prompt.end());
    for (int32_t v = 0; v < vocab; ++v) {
      if (!allowed.empty() && !allowed.count(v)) {
        EXPECT_EQ(got[size_t(v)], -kInf) << "token " << v;
        continue;
      }
      double want = logits[size_t(v)] + (bias.count(v) ? bias[v] : 0.0);
      if (seen.count(v))
        want = want > 0 ? want / p.repetition_penalty : want * p.repetition_penalty;
      EXPECT_NEAR(got[size_t(v)], want, 1e-4 * (1 + std::abs(want))) << "token " << v;
    }
    EXPECT_TRUE(changes_logits(p, 0));
  }
  SamplingParams p;
  p.logit_bias = {{3, 100.5f}};
  EXPECT_NE(p.problem().value_or("").find("logit_bias of token 3 must be in [-100, 100]"),
            std::string::npos);
  p.logit_bias.assign(SamplingParams::kMaxTokenList + 1, {1, 1.0f});
  EXPECT_NE(p.problem().value_or("").find("Too many logit bias tokens: 1025"), std::string::npos);
  p.logit_bias.clear();
  p.allowed_token_ids = {2, -1};
  EXPECT_NE(p.problem().value_or("").find("allowed_token_ids"), std::string::npos);
}

// bad_words: a sequence's last token is banned exactly when the output ends with the rest of
// it (a one-token sequence always), after the penalties.
TEST(LogitsProcessors, BadWordsBanTheTokenThatWouldCompleteThem) {
  SEEDED_RNG(rng);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t vocab = uniform(rng, 2, 50);
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (float& l : logits) l = uniform_float(rng, -6.0f, 6.0f);
    const auto output = random_ids(rng, uniform(rng, 0, 12), vocab);
    SamplingParams p;
    p.presence_penalty = 0.5f;
    for (int64_t k = uniform(rng, 1, 6); k > 0; --k) {
      std::vector<int32_t> word;
      const int64_t len = uniform(rng, 1, 4);
      // Half end the output so far (and then ban their last token), half are random.
      if (uniform(rng, 0, 1) == 0 && len - 1 <= static_cast<int64_t>(output.size())) {
        word.assign(output.end() - (len - 1), output.end());
        word.push_back(static_cast<int32_t>(uniform(rng, 0, vocab - 1)));
      } else {
        word = random_ids(rng, len, vocab);
      }
      p.bad_words_token_ids.push_back(word);
    }
    std::set<int32_t> banned;
    for (const auto& w : p.bad_words_token_ids) {
      const size_t n = w.size() - 1;
      if (n <= output.size() && std::equal(w.begin(), w.end() - 1, output.end() - long(n)))
        banned.insert(w.back());
    }
    std::vector<float> want = logits;
    apply_penalties_for_test(want, p, output);
    std::vector<float> got = logits;
    apply_logits_processors(got, p, {}, output);
    for (int32_t v = 0; v < vocab; ++v) {
      if (banned.count(v)) {
        EXPECT_EQ(got[size_t(v)], -kInf) << "token " << v;
      } else {
        EXPECT_EQ(got[size_t(v)], want[size_t(v)]) << "token " << v;
      }
    }
  }
  SamplingParams p;
  p.bad_words_token_ids = {{1, 2}, {}};
  EXPECT_NE(p.problem().value_or("").find("at least one token"), std::string::npos);
  p.bad_words_token_ids.assign(SamplingParams::kMaxBadWords + 1, {1});
  EXPECT_NE(p.problem().value_or("").find("Too many bad words after tokenization: 129"),
            std::string::npos);
}

TEST(LogitsProcessors, MinTokensMasksEosAndStopIdsUntilReached) {
  SEEDED_RNG(rng);
  for (int trial = 0; trial < 50; ++trial) {
    const int64_t vocab = uniform(rng, 4, 300);
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (float& l : logits) l = uniform_float(rng, -3.0f, 3.0f);
    SamplingParams p;
    p.min_tokens = uniform(rng, 1, 10);
    p.max_tokens = p.min_tokens + 5;
    p.eos_token_ids = random_ids(rng, uniform(rng, 1, 3), vocab);
    p.stop_token_ids = random_ids(rng, uniform(rng, 0, 3), vocab);
    p.ignore_eos = uniform(rng, 0, 1) == 1;  // EOS is held back either way, as in vLLM
    std::set<int32_t> masked(p.eos_token_ids.begin(), p.eos_token_ids.end());
    masked.insert(p.stop_token_ids.begin(), p.stop_token_ids.end());
    for (int64_t produced : {int64_t{0}, p.min_tokens - 1, p.min_tokens, p.min_tokens + 2}) {
      const std::vector<int32_t> output = random_ids(rng, produced, vocab);
      std::vector<float> got = logits;
      EXPECT_EQ(changes_logits(p, produced), produced < p.min_tokens);
      apply_logits_processors(got, p, {}, output);
      for (int32_t v = 0; v < vocab; ++v) {
        if (produced < p.min_tokens && masked.count(v)) {
          EXPECT_EQ(got[size_t(v)], -kInf) << "token " << v << " after " << produced;
        } else {
          EXPECT_EQ(got[size_t(v)], logits[size_t(v)]) << "token " << v << " after " << produced;
        }
      }
    }
  }
}

// allowed_token_ids whose every token is banned (bad_words here) cannot be met: the sampler
// takes the allowed tokens' raw logits instead of failing the step.
TEST(LogitsProcessors, BansThatLeaveNothingFallBackToTheAllowedTokens) {
  SEEDED_RNG(rng);
  const int64_t vocab = uniform(rng, 8, 200);
  Tensor logits = Tensor::empty({1, vocab}, DType::kF32);
  for (int64_t i = 0; i < vocab; ++i) logits.data<float>()[i] = uniform_float(rng, -1.0f, 1.0f);
  const auto only = static_cast<int32_t>(uniform(rng, 0, vocab - 1));
  SamplingParams p;
  p.temperature = 1.0f;
  p.allowed_token_ids = {only};
  p.bad_words_token_ids = {{only}};
  Sampler sampler(rng());
  const SamplingRow rows[] = {{&p, nullptr, {}, {}}};
  EXPECT_EQ(sampler.sample(logits, rows), std::vector<int32_t>{only});
}

TEST(LogitsProcessors, TheSamplerAppliesThemToACopy) {
  SEEDED_RNG(rng);
  const int64_t vocab = uniform(rng, 8, 200);
  Tensor logits = Tensor::empty({2, vocab}, DType::kF32);
  float* l = logits.data<float>();
  for (int64_t i = 0; i < 2 * vocab; ++i) l[i] = uniform_float(rng, -1.0f, 1.0f);
  // Row 0: its best token is an EOS, held back by min_tokens; row 1: its best token occurs in
  // the output and a large presence penalty pushes it below the second best.
  const auto best_two = [&](int64_t row) {
    std::vector<int32_t> ids(static_cast<size_t>(vocab));
    for (int32_t v = 0; v < vocab; ++v) ids[size_t(v)] = v;
    std::sort(ids.begin(), ids.end(),
              [&](int32_t a, int32_t b) { return l[row * vocab + a] > l[row * vocab + b]; });
    return std::pair{ids[0], ids[1]};
  };
  const auto [eos, second0] = best_two(0);
  const auto [repeated, second1] = best_two(1);
  SamplingParams held;
  held.temperature = 0;
  held.min_tokens = 3;
  held.eos_token_ids = {eos};
  SamplingParams penalized;
  penalized.temperature = 0;
  penalized.presence_penalty = 2.0f;
  penalized.frequency_penalty = 2.0f;
  const std::vector<int32_t> output = {repeated, repeated};
  const std::vector<float> before(l, l + 2 * vocab);
  Sampler sampler(rng());
  const SamplingRow rows[] = {{&held, nullptr, {}, {}}, {&penalized, nullptr, {}, output}};
  const auto tokens = sampler.sample(logits, rows);
  EXPECT_EQ(tokens[0], second0);
  EXPECT_EQ(tokens[1], second1);
  EXPECT_TRUE(std::equal(before.begin(), before.end(), l)) << "the model's logits changed";
}

// vLLM's thinking budget as its CPU sampler writes it: the last start and end markers found
// scanning forward, then the end marker's next token forced.
std::optional<int32_t> thinking_reference(const SamplingParams::ThinkingBudget& b,
                                          const std::vector<int32_t>& tokens) {
  const auto last = [&](const std::vector<int32_t>& marker) {
    int64_t at = -1;
    for (size_t pos = 0; pos + marker.size() <= tokens.size(); ++pos) {
      if (std::equal(marker.begin(), marker.end(), tokens.begin() + long(pos))) at = long(pos);
    }
    return at;
  };
  const int64_t start = last(b.start), end = last(b.end);
  if (start < 0 || start <= end) return std::nullopt;
  if (int64_t(tokens.size()) - start - int64_t(b.start.size()) < b.budget) return std::nullopt;
  size_t written = 0;
  for (size_t k = 1; k <= std::min(tokens.size(), b.end.size() - 1); ++k) {
    if (std::equal(b.end.begin(), b.end.begin() + long(k), tokens.end() - long(k))) written = k;
  }
  return b.end[written];
}

TEST(LogitsProcessors, ThinkingBudgetForcesTheEndMarkerAsVllm) {
  SEEDED_RNG(rng);
  const int64_t vocab = 6;  // few ids: markers and their parts recur by chance
  for (int trial = 0; trial < 3000; ++trial) {
    SamplingParams p;
    p.thinking_budget = SamplingParams::ThinkingBudget{uniform(rng, 0, 8),
                                                       random_ids(rng, uniform(rng, 1, 3), vocab),
                                                       random_ids(rng, uniform(rng, 1, 3), vocab)};
    std::vector<int32_t> tokens;
    for (int64_t parts = uniform(rng, 0, 6); parts > 0; --parts) {
      const int64_t kind = uniform(rng, 0, 2);
      const auto& marker = kind == 0 ? p.thinking_budget->start : p.thinking_budget->end;
      const std::vector<int32_t> piece =
          kind == 2 ? random_ids(rng, uniform(rng, 0, 10), vocab) : marker;
      tokens.insert(tokens.end(), piece.begin(), piece.end());
    }
    const size_t split = size_t(uniform(rng, 0, int64_t(tokens.size())));
    const std::vector<int32_t> prompt(tokens.begin(), tokens.begin() + long(split));
    const std::vector<int32_t> output(tokens.begin() + long(split), tokens.end());
    std::vector<float> logits(static_cast<size_t>(vocab));
    for (float& l : logits) l = uniform_float(rng, -4.0f, 4.0f);
    std::vector<float> want = logits;
    if (const auto forced = thinking_reference(*p.thinking_budget, tokens))
      want[size_t(*forced)] = 1.0e9f;
    EXPECT_TRUE(changes_logits(p, int64_t(output.size())));
    apply_logits_processors(logits, p, prompt, output);
    EXPECT_EQ(logits, want) << "trial " << trial;
  }
  SamplingParams p;
  p.thinking_budget = SamplingParams::ThinkingBudget{-2, {1}, {2}};
  EXPECT_NE(p.problem().value_or("").find("thinking_token_budget"), std::string::npos);
  p.thinking_budget = SamplingParams::ThinkingBudget{3, {}, {2}};
  EXPECT_NE(p.problem().value_or("").find("markers"), std::string::npos);
}

// Sampled greedily, a model that never ends its thinking is made to: the prompt opens it, the
// output thinks for exactly the budget, then writes the whole end marker, then runs free.
TEST(LogitsProcessors, ThinkingBudgetEndsThinkingAfterTheBudget) {
  SEEDED_RNG(rng);
  const int64_t vocab = 32;
  const std::vector<int32_t> start = {30}, end = {31, 29, 28};
  for (int trial = 0; trial < 30; ++trial) {
    SamplingParams p;
    p.temperature = 0.0f;
    p.thinking_budget = SamplingParams::ThinkingBudget{uniform(rng, 0, 12), start, end};
    // The prompt's thinking already has `early` tokens (they count against the budget).
    const int64_t early = uniform(rng, 0, 3);
    std::vector<int32_t> prompt = random_ids(rng, uniform(rng, 0, 6), 20);
    prompt.push_back(start[0]);
    for (int64_t k = 0; k < early; ++k) prompt.push_back(int32_t(uniform(rng, 0, 19)));
    std::vector<int32_t> output;
    for (int step = 0; step < 25; ++step) {
      std::vector<float> logits(static_cast<size_t>(vocab));
      for (float& l : logits) l = uniform_float(rng, -4.0f, 4.0f);
      for (const int32_t t : {28, 29, 30, 31}) logits[size_t(t)] = -50.0f;  // never by itself
      apply_logits_processors(logits, p, prompt, output);
      output.push_back(int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin()));
    }
    const int64_t thinking = std::max<int64_t>(0, p.thinking_budget->budget - early);
    ASSERT_GE(output.size(), size_t(thinking) + end.size());
    for (int64_t k = 0; k < thinking; ++k) EXPECT_LT(output[size_t(k)], 28) << k;
    EXPECT_TRUE(std::equal(end.begin(), end.end(), output.begin() + thinking));
    for (size_t k = size_t(thinking) + end.size(); k < output.size(); ++k)
      EXPECT_LT(output[k], 28) << k;
  }
}

}  // namespace
}  // namespace ctxpar::engine
