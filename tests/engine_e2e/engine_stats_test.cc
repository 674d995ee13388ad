// What `ctxpar bench` divides by: the engine's step statistics count prompt tokens as prefill
// and only the tokens sampled by decode-only steps as decode (the token sampled at the end of
// a prefill took no decode step); warm-up batches run first and are left out of the stats and
// the outputs. With --dummy-context, prompts are not computed and decodes still run.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <algorithm>
#include <random>

#include "ctxpar/engine/llm_engine.h"
#include "support/seeded_rng.h"

namespace ctxpar::engine {
namespace {

EngineConfig tiny_config() {
  EngineConfig c;
  c.model = "builtin:tiny-llama";
  c.max_model_len = 64;
  c.max_num_batched_tokens = 64;  // every prompt fits the first step: no mixed steps
  c.max_num_seqs = 8;
  c.dtype = "float32";
  c.kv_cache_memory = int64_t{16} << 20;
  c.threads_per_rank = 1;
  return c;
}

// 1-3 greedy requests of random prompts; adds their prompt and decode token counts.
std::vector<GenerationRequest> random_batch(std::mt19937& rng, int64_t& prompt_tokens,
                                            int64_t& decode_tokens) {
  std::vector<GenerationRequest> requests(1 + rng() % 3);
  for (auto& r : requests) {
    const int64_t len = 1 + static_cast<int64_t>(rng() % 12);
    for (int64_t i = 0; i < len; ++i)
      r.prompt_token_ids.push_back(static_cast<int32_t>(rng() % 256));
    r.params.temperature = 0;
    r.params.max_tokens = 1 + static_cast<int64_t>(rng() % 6);
    r.params.ignore_eos = true;
    prompt_tokens += len;
    decode_tokens += r.params.max_tokens - 1;
  }
  return requests;
}

// Decode steps of a batch that decodes in lockstep: the longest request's.
int64_t longest_decode(const std::vector<GenerationRequest>& requests) {
  int64_t steps = 0;
  for (const auto& r : requests) steps = std::max(steps, r.params.max_tokens - 1);
  return steps;
}

TEST(EngineStats, DecodeTokensExcludeTheTokenSampledByThePrefill) {
  const auto seed = test_support::test_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  int64_t prompt_tokens = 0, decode_tokens = 0;
  const std::vector<GenerationRequest> requests = random_batch(rng, prompt_tokens, decode_tokens);
  const GenerationResult result = generate(tiny_config(), requests);
  EXPECT_EQ(result.stats.prefill_tokens, prompt_tokens);
  EXPECT_EQ(result.stats.decode_tokens, decode_tokens);
  EXPECT_EQ(result.stats.decode_seconds > 0, decode_tokens > 0);
  // Every prompt is prefilled in the first step, so the longest request sets the decode steps.
  EXPECT_EQ(result.stats.decode_steps, longest_decode(requests));
}

TEST(EngineStats, WarmupBatchesAreLeftOutOfTheStatsAndTheOutputs) {
  const auto seed = test_support::test_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  int64_t prompt_tokens = 0, decode_tokens = 0, unused = 0;
  RunOptions options;
  const int rounds = 1 + static_cast<int>(rng() % 3);
  for (int w = 0; w < rounds; ++w) options.warmup.push_back(random_batch(rng, unused, unused));
  const std::vector<GenerationRequest> requests = random_batch(rng, prompt_tokens, decode_tokens);
  int64_t last_total = 0;
  options.on_step = [&](const StepProgress& p) { last_total = p.total_requests; };
  const GenerationResult warm = generate(tiny_config(), requests, options);
  const GenerationResult cold = generate(tiny_config(), requests);
  EXPECT_EQ(warm.stats.prefill_tokens, prompt_tokens);
  EXPECT_EQ(warm.stats.decode_tokens, decode_tokens);
  EXPECT_EQ(warm.stats.steps, cold.stats.steps);
  EXPECT_EQ(warm.stats.prefix_cache.requests, cold.stats.prefix_cache.requests);
  int64_t warmup_requests = 0;
  for (const auto& round : options.warmup) warmup_requests += static_cast<int64_t>(round.size());
  EXPECT_EQ(last_total, warmup_requests + static_cast<int64_t>(requests.size()));
  ASSERT_EQ(warm.outputs.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(warm.outputs[i].id, cold.outputs[i].id);
    EXPECT_EQ(warm.outputs[i].output_token_ids, cold.outputs[i].output_token_ids) << i;
    EXPECT_EQ(warm.outputs[i].finish_reason, "length") << i;
  }
}

// Prompt chunks are skipped (their sampled row is all zeros, so greedy picks token 0, where a
// computed prefill of random weights picks another token 511 times in 512), decodes run over
// the random context: every request gets its tokens, for GQA and MLA, with and without DCP.
TEST(EngineStats, DummyContextSkipsPromptsAndDecodesOverTheRandomKv) {
  const auto seed = test_support::test_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  struct Layout {
    const char* model;
    int tp, dcp;
  };
  // tiny-llama's 2 KV heads are replicated (and DCP-sharded) from T = 4.
  for (const auto& [model, tp, dcp] :
       {Layout{"builtin:tiny-llama", 1, 1}, Layout{"builtin:tiny-llama", 4, 2},
        Layout{"builtin:tiny-deepseek-v2", 1, 1}, Layout{"builtin:tiny-deepseek-v2", 2, 2}}) {
    {
      SCOPED_TRACE(fmt::format("{} T={} N={}", model, tp, dcp));
      EngineConfig c = tiny_config();
      c.model = model;
      c.tensor_parallel_size = tp;
      c.decode_context_parallel_size = dcp;
      c.dummy_context = true;
      int64_t prompt_tokens = 0, decode_tokens = 0;
      std::vector<GenerationRequest> requests = random_batch(rng, prompt_tokens, decode_tokens);
      for (auto& r : requests) {  // a context of two tokens or more: not taken for a decode
        r.prompt_token_ids.push_back(static_cast<int32_t>(1 + rng() % 255));
        ++prompt_tokens;
      }
      const GenerationResult result = generate(c, requests);
      EXPECT_EQ(result.stats.prefill_tokens, prompt_tokens);
      EXPECT_EQ(result.stats.decode_tokens, decode_tokens);
      EXPECT_EQ(result.stats.decode_steps, longest_decode(requests));
      ASSERT_EQ(result.outputs.size(), requests.size());
      for (size_t i = 0; i < requests.size(); ++i) {
        const GenerationOutput& out = result.outputs[i];
        EXPECT_EQ(out.finish_reason, "length") << i;
        ASSERT_EQ(static_cast<int64_t>(out.output_token_ids.size()), requests[i].params.max_tokens)
            << i;
        EXPECT_EQ(out.output_token_ids[0], 0) << i;
      }
    }
  }
}

}  // namespace
}  // namespace ctxpar::engine
