// What `ctxpar bench` divides by: the engine's step statistics count prompt tokens as prefill
// and only the tokens sampled by decode-only steps as decode (the token sampled at the end of
// a prefill took no decode step).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <random>

#include "ctxpar/engine/llm_engine.h"

namespace ctxpar::engine {
namespace {

TEST(EngineStats, DecodeTokensExcludeTheTokenSampledByThePrefill) {
  const auto seed = std::random_device{}();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  EngineConfig c;
  c.model = "builtin:tiny-llama";
  c.max_model_len = 64;
  c.max_num_batched_tokens = 64;  // every prompt fits the first step: no mixed steps
  c.max_num_seqs = 8;
  c.dtype = "float32";
  c.kv_cache_memory = int64_t{16} << 20;
  c.threads_per_rank = 1;
  std::vector<GenerationRequest> requests(1 + rng() % 3);
  int64_t prompt_tokens = 0, decode_tokens = 0;
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
  const GenerationResult result = generate(c, requests);
  EXPECT_EQ(result.stats.prefill_tokens, prompt_tokens);
  EXPECT_EQ(result.stats.decode_tokens, decode_tokens);
  EXPECT_EQ(result.stats.decode_seconds > 0, decode_tokens > 0);
}

}  // namespace
}  // namespace ctxpar::engine
