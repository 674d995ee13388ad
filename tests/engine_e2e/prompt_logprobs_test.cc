// Prompt logprobs (vLLM's prompt_logprobs) against transformers: on the fixtures, every prompt
// token's logprob, rank and most likely tokens are the log-softmax of transformers' logits at
// the position before it (tests/fixtures golden.json), for T ranks with N = 1 and N = T, the
// prompts prefilled whole or in random chunks. The same prompts sit in the prefix cache first
// (a warm-up batch without prompt_logprobs): a request asking for them must not read it, while
// one that does not ask does. A KV budget of about one request forces preemption by recompute,
// and the scores still come once per prompt token.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/engine/llm_engine.h"
#include "ctxpar/model/model_config.h"
#include "fixture_cases.h"
#include "fixture_golden.h"
#include "support/seeded_rng.h"

namespace ctxpar::engine {
namespace {

using testing_support::FixtureGolden;

using Case = testing_support::FixtureCase;

std::string fixture_dir(const std::string& fixture) {
  return std::string(CTXPAR_FIXTURES_DIR) + "/" + fixture;
}

EngineConfig config_for(const Case& c) {
  EngineConfig config;
  config.model = fixture_dir(c.fixture);
  config.tensor_parallel_size = c.tp;
  config.decode_context_parallel_size = c.dcp;
  config.block_size = 4;
  config.max_model_len = 64;
  config.max_num_seqs = 4;
  config.dtype = "float32";
  config.kv_cache_memory = int64_t{8} << 20;
  config.threads_per_rank = 1;
  return config;
}

// log_softmax of one golden row, in double.
std::vector<double> log_softmax(const std::vector<float>& logits) {
  const double top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (const float x : logits) sum += std::exp(x - top);
  const double lse = top + std::log(sum);
  std::vector<double> out(logits.size());
  for (size_t v = 0; v < logits.size(); ++v) out[v] = logits[v] - lse;
  return out;
}

// Checks one request's prompt scores against the golden logits of its prompt.
void expect_scores(const GenerationOutput& got, const std::vector<std::vector<float>>& golden,
                   int32_t num_top, const std::string& what) {
  SCOPED_TRACE(what);
  const std::vector<int32_t>& prompt = got.prompt_token_ids;
  ASSERT_EQ(got.prompt_logprobs.size(), prompt.size() - 1) << "one score per prompt token after "
                                                              "the first, each once";
  for (size_t j = 1; j < prompt.size(); ++j) {
    SCOPED_TRACE(fmt::format("prompt token {}", j));
    const std::vector<double> want = log_softmax(golden[j - 1]);
    const SampledLogprobs& s = got.prompt_logprobs[j - 1];
    const auto tol = [](double lp) { return 1e-3 + 1e-4 * std::abs(lp); };
    ASSERT_EQ(s.sampled.token, prompt[j]);
    const double lp = want[static_cast<size_t>(prompt[j])];
    EXPECT_NEAR(s.sampled.logprob, lp, tol(lp));
    // Ranks may differ only where another token's logprob is within the tolerance.
    const auto count_above = [&](double v) {
      return std::count_if(want.begin(), want.end(), [&](double w) { return w > v; });
    };
    EXPECT_GE(s.rank, 1 + count_above(lp + tol(lp)));
    EXPECT_LE(s.rank, 1 + count_above(lp - tol(lp)));
    std::vector<double> sorted = want;
    std::sort(sorted.rbegin(), sorted.rend());
    ASSERT_EQ(s.top.size(), static_cast<size_t>(num_top));
    for (size_t i = 0; i < s.top.size(); ++i) {
      EXPECT_NEAR(s.top[i].logprob, sorted[i], tol(sorted[i])) << "top " << i;
      const double own = want.at(static_cast<size_t>(s.top[i].token));
      EXPECT_NEAR(s.top[i].logprob, own, tol(own)) << "top " << i << " token " << s.top[i].token;
    }
  }
}

class PromptLogprobs : public ::testing::TestWithParam<Case> {};

TEST_P(PromptLogprobs, MatchTransformersAndSkipThePrefixCache) {
  const Case c = GetParam();
  SEEDED_RNG(rng);
  const FixtureGolden golden = testing_support::load_fixture_golden(fixture_dir(c.fixture));

  // Each fixture prompt twice with prompt_logprobs (random top counts, sampled decodes), and
  // the longest once without: that one shows the warm-up filled the prefix cache.
  std::vector<GenerationRequest> requests;
  std::vector<size_t> golden_of;
  for (int copy = 0; copy < 2; ++copy) {
    for (size_t p = 0; p < golden.prompts.size(); ++p) {
      GenerationRequest r;
      r.id = fmt::format("p{}-{}", p, copy);
      r.prompt_token_ids = golden.prompts[p];
      r.params.prompt_logprobs = static_cast<int32_t>(rng() % 6);
      r.params.temperature = 1.0f;
      r.params.seed = rng();
      r.params.max_tokens = 1 + static_cast<int64_t>(rng() % 6);
      r.params.ignore_eos = true;
      requests.push_back(std::move(r));
      golden_of.push_back(p);
    }
  }
  GenerationRequest control;
  control.id = "control";
  control.prompt_token_ids = golden.prompts.back();
  control.params.temperature = 0;
  control.params.max_tokens = 2;
  control.params.ignore_eos = true;
  requests.push_back(control);
  std::shuffle(requests.begin(), requests.end(), rng);
  const auto check_all = [&](const GenerationResult& result, const std::string& run) {
    ASSERT_EQ(result.outputs.size(), requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      const GenerationOutput& out = result.outputs[i];
      ASSERT_EQ(out.finish_reason, "length") << run << " " << out.id;
      if (out.id == "control") {
        EXPECT_TRUE(out.prompt_logprobs.empty());
        continue;
      }
      const size_t p = static_cast<size_t>(out.id[1] - '0');
      expect_scores(out, golden.logits[p], *requests[i].params.prompt_logprobs,
                    fmt::format("{} {}", run, out.id));
    }
  };

  EngineConfig config = config_for(c);
  // Budgets from 4 (the 23-token prompt in 6 chunks) to one that takes every prompt at once.
  config.max_num_batched_tokens = 4 + static_cast<int64_t>(rng() % 60);
  SCOPED_TRACE(fmt::format("max_num_batched_tokens {}", config.max_num_batched_tokens));
  RunOptions options;
  std::vector<GenerationRequest> warmup;
  for (const auto& prompt : golden.prompts) {
    GenerationRequest w;
    w.prompt_token_ids = prompt;
    w.params.max_tokens = 1;
    warmup.push_back(w);
  }
  options.warmup = {warmup};
  const GenerationResult cached = generate(config, requests, options);
  check_all(cached, "after warm-up");
  // Only the control request may start on cached blocks: (23 - 1) / (B·N) of them.
  const int64_t bn = int64_t{4} * c.dcp;
  EXPECT_EQ(cached.stats.prefix_cache.hits,
            (static_cast<int64_t>(golden.prompts.back().size()) - 1) / bn * bn);

  // Longer outputs in about one request's blocks: running requests outgrow the pool and are
  // preempted and recomputed.
  EngineConfig tight = config;
  const int64_t per_block = cached.stats.kv_bytes_per_rank / cached.stats.blocks_per_rank;
  tight.max_model_len = 40;
  tight.kv_cache_memory = per_block * (40 / bn + 1);
  for (GenerationRequest& r : requests) r.params.max_tokens = 16;
  const GenerationResult preempted = generate(tight, requests);
  check_all(preempted, "tight KV");
  EXPECT_GT(preempted.stats.preemptions, 0);
}

TEST(PromptLogprobsLimits, OverMaxLogprobsIsRejectedNamingTheLimit) {
  EngineConfig config = config_for({"tiny-llama-fixture", 1, 1});
  config.max_logprobs = 3;
  GenerationRequest r;
  r.prompt_token_ids = {1, 2, 3};
  r.params.prompt_logprobs = 4;
  GenerationRequest sample = r;
  sample.params.prompt_logprobs.reset();
  sample.params.logprobs = 5;
  GenerationRequest fits = r;
  fits.params.prompt_logprobs = 3;
  const GenerationResult got = generate(config, {r, sample, fits});
  EXPECT_NE(got.outputs[0].finish_reason.find(
                "Requested prompt logprobs of 4, which is greater than max allowed: 3"),
            std::string::npos)
      << got.outputs[0].finish_reason;
  EXPECT_NE(got.outputs[1].finish_reason.find(
                "Requested sample logprobs of 5, which is greater than max allowed: 3"),
            std::string::npos)
      << got.outputs[1].finish_reason;
  EXPECT_EQ(got.outputs[2].finish_reason, "length");
  EXPECT_EQ(got.outputs[2].prompt_logprobs.size(), 2u);

  // -1: the whole vocabulary (256).
  config.max_logprobs = -1;
  r.params.prompt_logprobs = 256;
  GenerationRequest over = r;
  over.params.prompt_logprobs = 257;
  const GenerationResult vocab = generate(config, {r, over});
  EXPECT_EQ(vocab.outputs[0].finish_reason, "length");
  ASSERT_EQ(vocab.outputs[0].prompt_logprobs.size(), 2u);
  EXPECT_EQ(vocab.outputs[0].prompt_logprobs[0].top.size(), 256u);
  EXPECT_NE(vocab.outputs[1].finish_reason.find("max allowed: 256"), std::string::npos)
      << vocab.outputs[1].finish_reason;

  config.max_logprobs = -2;
  EXPECT_THROW(generate(config, {r}), Error);
}

std::vector<Case> cases() {
  return testing_support::fixture_cases(CTXPAR_FIXTURES_DIR,
                                        {"tiny-llama-fixture", "tiny-qwen3-moe-fixture",
                                         "tiny-deepseek-v3-fixture", "tiny-deepseek-v32-fixture"},
                                        {{1, 1}, {2, 2}, {4, 2}});
}

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return testing_support::fixture_case_name(info.param);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PromptLogprobs, ::testing::ValuesIn(cases()), case_name);

}  // namespace
}  // namespace ctxpar::engine
