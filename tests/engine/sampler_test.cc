// Sampler: greedy ties, top-k / top-p masks and draws against the double-precision
// reference, seeded reproducibility across batches, and the empirical distribution.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/core/tensor.h"
#include "ctxpar/core/thread_pool.h"
#include "ctxpar/engine/sampler.h"
#include "support/seeded_rng.h"

namespace ctxpar::engine {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}
double uniform01(std::mt19937_64& rng) {
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

std::vector<float> random_logits(std::mt19937_64& rng, int64_t vocab, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> l(static_cast<size_t>(vocab));
  for (auto& x : l) x = normal(rng);
  // Some masked tokens, never all.
  const int64_t masked = uniform(rng, 0, vocab / 4);
  for (int64_t i = 0; i < masked; ++i) l[static_cast<size_t>(uniform(rng, 1, vocab - 1))] = -kInf;
  return l;
}

SamplingParams random_params(std::mt19937_64& rng, int64_t vocab) {
  SamplingParams p;
  p.temperature = static_cast<float>(0.05 + 1.95 * uniform01(rng));
  if (uniform(rng, 0, 2) == 0) p.min_p = static_cast<float>(0.5 * uniform01(rng));
  switch (uniform(rng, 0, 3)) {
    case 0:
      p.top_k = 0;
      break;
    case 1:
      p.top_k = static_cast<int32_t>(uniform(rng, 1, vocab));
      break;
    case 2:
      p.top_k = static_cast<int32_t>(uniform(rng, 1, 5));
      break;
    default:
      p.top_k = static_cast<int32_t>(vocab + uniform(rng, 0, 10));
      break;
  }
  p.top_p = uniform(rng, 0, 2) == 0 ? 1.0f : static_cast<float>(0.02 + 0.97 * uniform01(rng));
  return p;
}

TEST(Sampler, GreedyPicksTheLowestIdAmongTies) {
  SEEDED_RNG(rng);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t vocab = uniform(rng, 1, 500);
    std::vector<float> logits = random_logits(rng, vocab, 2.0f);
    const float top = *std::max_element(logits.begin(), logits.end()) + 1.0f;
    std::vector<int64_t> tied;
    for (int k = 0; k < uniform(rng, 1, 4); ++k) {
      const int64_t at = uniform(rng, 0, vocab - 1);
      logits[static_cast<size_t>(at)] = top;
      tied.push_back(at);
    }
    const int64_t want = *std::min_element(tied.begin(), tied.end());
    EXPECT_EQ(greedy_token(logits), want);
    SamplingParams greedy;
    greedy.temperature =
        static_cast<float>(uniform01(rng) * SamplingParams::kGreedyTemperature * 0.99);
    EXPECT_TRUE(greedy.is_greedy());
    EXPECT_EQ(sample_token(logits, greedy, uniform01(rng) * 0.999), want);
    EXPECT_EQ(reference::sample_token(logits, greedy, 0.5), want);
    const auto dist = sampling_distribution(logits, greedy);
    ASSERT_EQ(dist.size(), 1u);
    EXPECT_EQ(dist[0].token, want);
  }
}

TEST(Sampler, GreedyRowsDrawNoRandomNumbers) {
  SEEDED_RNG(rng);
  const int64_t vocab = uniform(rng, 2, 100);
  Tensor logits = Tensor::empty({2, vocab}, DType::kF32);
  for (int64_t i = 0; i < 2 * vocab; ++i)
    logits.data<float>()[i] = static_cast<float>(uniform01(rng));
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  std::mt19937_64 own(rng());
  const std::mt19937_64 before = own;
  Sampler sampler(rng());
  const SamplingRow rows[] = {{&greedy, &own}, {&greedy, nullptr}};
  const auto tokens = sampler.sample(logits, rows);
  EXPECT_EQ(own, before);
  EXPECT_EQ(tokens[0], greedy_token({logits.data<float>(), static_cast<size_t>(vocab)}));
}

// Tokens whose membership can flip with float vs double rounding: the cumulative mass at the
// top-p boundary is within `tol` of top_p.
bool top_p_boundary_is_ambiguous(std::span<const float> logits, const SamplingParams& p,
                                 double tol) {
  if (p.top_p >= 1.0f) return false;
  std::vector<std::pair<float, int32_t>> ranked;
  for (size_t v = 0; v < logits.size(); ++v) ranked.push_back({logits[v], -int32_t(v)});
  std::sort(ranked.rbegin(), ranked.rend());
  size_t keep = ranked.size();
  if (p.top_k > 0 && size_t(p.top_k) < keep) keep = size_t(p.top_k);
  std::vector<double> w;
  double total = 0;
  for (size_t i = 0; i < keep; ++i) {
    const double x = std::exp((double(ranked[i].first) - ranked[0].first) / p.temperature);
    w.push_back(x < p.min_p ? 0.0 : x);  // min-p drops it before top-p sees it
    total += w.back();
  }
  double mass = 0;
  for (double x : w) {
    mass += x;
    if (std::abs(mass / total - p.top_p) < tol) return true;
  }
  return false;
}

TEST(Sampler, MasksAndProbabilitiesMatchTheReference) {
  SEEDED_RNG(rng);
  int compared = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t vocab = uniform(rng, 1, trial % 10 == 0 ? 5000 : 300);
    std::vector<float> logits =
        random_logits(rng, vocab, static_cast<float>(0.5 + 4 * uniform01(rng)));
    // Every third trial: logits on a coarse grid, so ties decide the top-k / top-p boundary.
    if (trial % 3 == 0) {
      for (float& l : logits) l = std::round(l * 2.0f) / 2.0f;
    }
    const SamplingParams p = random_params(rng, vocab);
    SCOPED_TRACE(::testing::Message() << "vocab " << vocab << " T " << p.temperature << " k "
                                      << p.top_k << " p " << p.top_p << " min_p " << p.min_p);
    if (top_p_boundary_is_ambiguous(logits, p, 1e-5)) continue;
    ++compared;
    const auto fast = sampling_distribution(logits, p);
    const auto ref = reference::sampling_distribution(logits, p);
    ASSERT_EQ(fast.size(), ref.size());
    double sum = 0;
    for (size_t i = 0; i < fast.size(); ++i) {
      ASSERT_EQ(fast[i].token, ref[i].token);
      EXPECT_NEAR(fast[i].probability, ref[i].probability, 1e-5);
      sum += fast[i].probability;
    }
    EXPECT_NEAR(sum, 1.0, 1e-9);

    // The mask's own contract, independent of the reference: at most k tokens, the best-ranked
    // ones, and the nucleus is the shortest prefix reaching top_p.
    const int64_t finite =
        std::count_if(logits.begin(), logits.end(), [](float l) { return l > -kInf; });
    int64_t limit = finite;
    if (p.top_k > 0) limit = std::min<int64_t>(limit, p.top_k);
    EXPECT_LE(static_cast<int64_t>(fast.size()), limit);
    EXPECT_GE(fast.size(), 1u);
    float worst_kept = kInf;
    for (const auto& t : fast) worst_kept = std::min(worst_kept, logits[size_t(t.token)]);
    for (size_t v = 0; v < logits.size(); ++v) {
      const bool kept = std::any_of(fast.begin(), fast.end(), [&](const TokenProbability& t) {
        return t.token == int32_t(v);
      });
      if (!kept) {
        EXPECT_LE(logits[v], worst_kept) << "token " << v << " dropped for a worse one";
      }
    }
    // min-p keeps exactly the tokens at least min_p times as likely as the best one.
    const float best = *std::max_element(logits.begin(), logits.end());
    const auto relative = [&](int32_t v) {
      return std::exp((double(logits[size_t(v)]) - best) / p.temperature);
    };
    for (const auto& t : fast) EXPECT_GE(relative(t.token), p.min_p) << "token " << t.token;
    if ((p.top_k <= 0 || p.top_k >= vocab) && p.top_p >= 1.0f) {
      int64_t passing = 0;
      for (size_t v = 0; v < logits.size(); ++v) {
        passing += logits[v] > -kInf && relative(int32_t(v)) >= p.min_p;
      }
      EXPECT_EQ(static_cast<int64_t>(fast.size()), passing);
    }
    // Sampled tokens agree for the same variate, except when u sits on a CDF boundary.
    for (int d = 0; d < 5; ++d) {
      const double u = uniform01(rng) * 0.999999;
      const int32_t a = sample_token(logits, p, u);
      const int32_t b = reference::sample_token(logits, p, u);
      if (a == b) continue;
      double cdf = 0;
      double nearest = 1;
      for (const auto& t : ref) {
        cdf += t.probability;
        nearest = std::min(nearest, std::abs(cdf - u));
      }
      EXPECT_LT(nearest, 1e-6) << "u " << u << ": " << a << " vs reference " << b;
    }
  }
  EXPECT_GT(compared, 300);
}

TEST(Sampler, TopPKeepsTheShortestPrefixReachingTheMass) {
  SEEDED_RNG(rng);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t vocab = uniform(rng, 2, 2000);
    const std::vector<float> logits = random_logits(rng, vocab, 3.0f);
    SamplingParams p;
    p.temperature = static_cast<float>(0.3 + uniform01(rng));
    p.top_p = static_cast<float>(0.05 + 0.9 * uniform01(rng));
    if (top_p_boundary_is_ambiguous(logits, p, 1e-5)) continue;
    SamplingParams all = p;
    all.top_p = 1.0f;
    const auto full = reference::sampling_distribution(logits, all);
    const auto nucleus = sampling_distribution(logits, p);
    // Mass (under the full distribution) of the kept set reaches top_p; without its least
    // likely member it would not.
    double mass = 0, least = 1;
    for (const auto& t : nucleus) {
      const auto it = std::find_if(full.begin(), full.end(),
                                   [&](const TokenProbability& f) { return f.token == t.token; });
      ASSERT_NE(it, full.end());
      mass += it->probability;
      least = std::min(least, it->probability);
    }
    EXPECT_GE(mass, p.top_p - 1e-9);
    EXPECT_LT(mass - least, p.top_p + 1e-9);
  }
}

TEST(Sampler, SeededRequestsIgnoreBatchCompositionAndThreads) {
  SEEDED_RNG(rng);
  const int64_t vocab = uniform(rng, 50, 3000);
  const int steps = 12;
  SamplingParams seeded = random_params(rng, vocab);
  seeded.temperature = 1.0f;
  seeded.seed = rng();
  SamplingParams noisy = random_params(rng, vocab);
  // Per step: the seeded request's logits.
  std::vector<std::vector<float>> own_logits;
  for (int s = 0; s < steps; ++s) own_logits.push_back(random_logits(rng, vocab, 2.0f));

  const auto run = [&](bool alone, ThreadPool* pool) {
    std::mt19937_64 generator(*seeded.seed);
    Sampler sampler(rng());
    std::vector<int32_t> out;
    for (int s = 0; s < steps; ++s) {
      const int64_t others = alone ? 0 : uniform(rng, 1, 6);
      const int64_t at = uniform(rng, 0, others);
      Tensor logits = Tensor::empty({others + 1, vocab}, DType::kF32);
      std::vector<SamplingRow> rows;
      std::vector<std::mt19937_64> other_generators(static_cast<size_t>(others),
                                                    std::mt19937_64(rng()));
      for (int64_t r = 0, o = 0; r <= others; ++r) {
        const std::vector<float> l =
            r == at ? own_logits[size_t(s)] : random_logits(rng, vocab, 2.0f);
        std::copy(l.begin(), l.end(), logits.data<float>() + r * vocab);
        if (r == at) {
          rows.push_back({&seeded, &generator});
        } else {
          rows.push_back({&noisy, uniform(rng, 0, 1) ? &other_generators[size_t(o)] : nullptr});
          ++o;
        }
      }
      out.push_back(sampler.sample(logits, rows, pool)[size_t(at)]);
    }
    return out;
  };
  ThreadPool pool(3);
  const std::vector<int32_t> alone = run(true, nullptr);
  EXPECT_EQ(run(false, nullptr), alone);
  EXPECT_EQ(run(false, &pool), alone);
  // And it is the draw sequence of a fresh generator with that seed.
  std::mt19937_64 g(*seeded.seed);
  for (int s = 0; s < steps; ++s) {
    EXPECT_EQ(alone[size_t(s)],
              reference::sample_token(own_logits[size_t(s)], seeded, uniform_variate(g)));
  }
}

TEST(Sampler, EmpiricalFrequenciesMatchTheDistribution) {
  SEEDED_RNG(rng);
  for (int trial = 0; trial < 4; ++trial) {
    const int64_t vocab = 8;
    const std::vector<float> logits = random_logits(rng, vocab, 1.5f);
    SamplingParams p;
    p.temperature = static_cast<float>(0.5 + uniform01(rng));
    p.top_k = trial % 2 ? 5 : 0;
    p.top_p = trial >= 2 ? 0.85f : 1.0f;
    p.seed = rng();
    std::mt19937_64 generator(*p.seed);
    // What the sampler draws from (checked against the reference in another test).
    const auto dist = sampling_distribution(logits, p);
    const int draws = 40000;
    Tensor batch = Tensor::empty({1, vocab}, DType::kF32);
    std::copy(logits.begin(), logits.end(), batch.data<float>());
    Sampler sampler(rng());
    std::map<int32_t, int> counts;
    const SamplingRow row{&p, &generator};
    for (int i = 0; i < draws; ++i) ++counts[sampler.sample(batch, {&row, 1})[0]];
    double chi2 = 0;
    int kept_seen = 0;
    for (const auto& t : dist) {
      const double expected = t.probability * draws;
      const double got = counts.count(t.token) ? counts[t.token] : 0;
      chi2 += (got - expected) * (got - expected) / std::max(expected, 1e-9);
      kept_seen += counts.count(t.token);
    }
    // Never a masked token.
    int total_kept = 0;
    for (const auto& t : dist) total_kept += counts.count(t.token) ? counts[t.token] : 0;
    EXPECT_EQ(total_kept, draws) << "drew a masked token";
    // dof <= 7; P(chi2 > 40 | 7 dof) < 1e-5.
    EXPECT_LT(chi2, 40.0);
    EXPECT_GE(kept_seen, 1);
  }
}

TEST(Sampler, RejectsBadLogitsAndShapes) {
  SEEDED_RNG(rng);
  const int64_t vocab = uniform(rng, 2, 50);
  SamplingParams p;
  Sampler sampler(rng());
  Tensor logits = Tensor::empty({3, vocab}, DType::kF32);
  for (int64_t i = 0; i < 3 * vocab; ++i)
    logits.data<float>()[i] = static_cast<float>(uniform01(rng));
  const SamplingRow rows[] = {{&p, nullptr}, {&p, nullptr}, {&p, nullptr}};
  EXPECT_EQ(sampler.sample(logits, rows).size(), 3u);
  EXPECT_THROW(sampler.sample(logits, std::span(rows, 2)), Error);
  const SamplingRow missing[] = {{&p, nullptr}, {nullptr, nullptr}, {&p, nullptr}};
  EXPECT_THROW(sampler.sample(logits, missing), Error);

  const int64_t bad = uniform(rng, 0, vocab - 1);
  logits.data<float>()[vocab + bad] = std::nanf("");
  try {
    sampler.sample(logits, rows);
    ADD_FAILURE() << "NaN accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("row 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("token " + std::to_string(bad)), std::string::npos)
        << e.what();
  }
  std::vector<float> masked(static_cast<size_t>(vocab), -kInf);
  EXPECT_THROW(greedy_token(masked), Error);
  // +inf anywhere (in the vectorized lanes or the tail past them) is named in the error.
  const int64_t inf_at = uniform(rng, 0, vocab - 1);
  masked[static_cast<size_t>(inf_at)] = kInf;
  try {
    greedy_token(masked);
    ADD_FAILURE() << "+inf accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token " + std::to_string(inf_at)), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(sampler.sample(Tensor::empty({vocab}, DType::kF32), rows), Error);
  SamplingParams invalid;
  invalid.top_p = 0.0f;
  EXPECT_THROW(sample_token(std::vector<float>{1, 2}, invalid, 0.5), Error);
  EXPECT_THROW(sample_token(std::vector<float>{1, 2}, p, 1.0), Error);
}

}  // namespace
}  // namespace ctxpar::engine
