// End to end, f32: greedy tokens of every built-in model are identical across T, N, I, B and
// the comm plan, with concurrent requests, a prompt longer than the token budget (chunked
// prefill) and a KV budget small enough to force preemption by recompute.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <random>

#include "ctxpar/core/error.h"
#include "ctxpar/engine/llm_engine.h"
#include "ctxpar/model/model_config.h"
#include "ctxpar/model/parallel_validation.h"
#include "support/seeded_rng.h"

namespace ctxpar::engine {
namespace {

constexpr int64_t kMaxModelLen = 96;
constexpr int64_t kTokenBudget = 24;  // smaller than the longest prompt: it is chunked

std::vector<GenerationRequest> random_requests(std::mt19937& rng) {
  std::vector<GenerationRequest> requests;
  const int64_t lengths[] = {1,
                             2 + static_cast<int64_t>(rng() % 9),
                             30 + static_cast<int64_t>(rng() % 30),
                             5 + static_cast<int64_t>(rng() % 20),
                             3,
                             40 + static_cast<int64_t>(rng() % 20),
                             20 + static_cast<int64_t>(rng() % 20)};
  for (int64_t len : lengths) {
    GenerationRequest r;
    for (int64_t i = 0; i < len; ++i)
      r.prompt_token_ids.push_back(static_cast<int32_t>(rng() % 256));
    r.params.temperature = 0;
    r.params.max_tokens = 4 + static_cast<int64_t>(rng() % 8);
    r.params.ignore_eos = true;  // same lengths everywhere; EOS handling is tested elsewhere
    requests.push_back(std::move(r));
  }
  return requests;
}

EngineConfig base_config(const std::string& model) {
  EngineConfig c;
  c.model = model;
  c.max_model_len = kMaxModelLen;
  c.max_num_batched_tokens = kTokenBudget;
  c.max_num_seqs = 8;
  c.dtype = "float32";
  c.kv_cache_memory = int64_t{64} << 20;
  c.threads_per_rank = 1;
  return c;
}

struct Shape {
  int tp, dcp, interleave, block;
  const char* plan;
};

// The built-ins without sparse attention: GQA (Llama, Qwen2) and MLA (DeepSeek-V2, V3).
constexpr const char* kDenseBuiltins[] = {"builtin:tiny-llama", "builtin:tiny-qwen2",
                                          "builtin:tiny-deepseek-v2", "builtin:tiny-deepseek-v3"};

// Whether the model's heads allow the shape's (T, N).
bool shape_applies(const model::ModelConfig& config, const Shape& s) {
  try {
    model::validate_for_parallel(config, s.tp, s.dcp);
    return true;
  } catch (const Error&) {
    return false;
  }
}

// Per request, ‖got − want‖ / ‖want‖ over the logits of the first sampled token (both runs
// with record_logits); every logit of `got` must be finite.
std::vector<double> first_logit_errors(const GenerationResult& got, const GenerationResult& want) {
  std::vector<double> errors;
  for (size_t q = 0; q < want.outputs.size(); ++q) {
    const auto& a = got.outputs.at(q).logits.at(0);
    const auto& b = want.outputs[q].logits.at(0);
    EXPECT_EQ(a.size(), b.size()) << "request " << q;
    double num = 0, den = 0;
    for (size_t v = 0; v < std::min(a.size(), b.size()); ++v) {
      EXPECT_TRUE(std::isfinite(a[v])) << "request " << q << " token " << v;
      num += (double(a[v]) - b[v]) * (double(a[v]) - b[v]);
      den += double(b[v]) * b[v];
    }
    errors.push_back(std::sqrt(num / den));
  }
  return errors;
}

class GreedyConsistency : public ::testing::TestWithParam<std::string> {};

TEST_P(GreedyConsistency, SameTokensForEveryParallelShape) {
  const std::string model = GetParam();
  const auto seed = test_support::test_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  const auto requests = random_requests(rng);
  const GenerationResult reference = generate(base_config(model), requests);
  ASSERT_EQ(reference.outputs.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    ASSERT_EQ(reference.outputs[i].output_token_ids.size(),
              static_cast<size_t>(requests[i].params.max_tokens));
  }
  const model::ModelConfig config = model::resolve_model_config(model);
  const std::vector<Shape> shapes = {{2, 2, 1, 16, "ag_rs"}, {4, 2, 2, 4, "a2a"},
                                     {4, 4, 1, 1, "ag_rs"},  {3, 3, 4, 4, "a2a"},
                                     {8, 8, 2, 8, "a2a"},    {6, 2, 1, 2, "ag_rs"},
                                     {4, 1, 1, 16, "ag_rs"}, {8, 4, 16, 16, "ag_rs"}};
  int ran = 0;
  for (const Shape& s : shapes) {
    if (!shape_applies(config, s)) continue;
    for (bool tight_kv : {false, true}) {
      EngineConfig c = base_config(model);
      c.tensor_parallel_size = s.tp;
      c.decode_context_parallel_size = s.dcp;
      c.cp_kv_cache_interleave_size = s.interleave;
      c.block_size = s.block;
      c.dcp_comm_backend = s.plan;
      if (tight_kv) {
        // Room for about one request of max_model_len: the seven requests must take turns.
        const GenerationResult probe = generate(c, {requests[0]});
        const int64_t per_block = probe.stats.kv_bytes_per_rank / probe.stats.blocks_per_rank;
        const int64_t group_tokens_per_block = int64_t{s.block} * s.dcp;
        c.kv_cache_memory =
            per_block * ((kMaxModelLen + group_tokens_per_block - 1) / group_tokens_per_block + 1);
      }
      SCOPED_TRACE(fmt::format("T={} N={} I={} B={} {} tight_kv={}", s.tp, s.dcp, s.interleave,
                               s.block, s.plan, tight_kv));
      const GenerationResult got = generate(c, requests);
      for (size_t i = 0; i < requests.size(); ++i) {
        EXPECT_EQ(got.outputs[i].output_token_ids, reference.outputs[i].output_token_ids)
            << "request " << i;
      }
      ++ran;
    }
  }
  EXPECT_GE(ran, 6) << "too few shapes apply to " << model;
}

// Long prompts in a KV budget of about one max_model_len request with small virtual blocks:
// running requests outgrow the pool while decoding, so some are preempted and recomputed,
// and every token must still equal the unconstrained run's.
TEST_P(GreedyConsistency, PreemptionByRecomputeKeepsEveryToken) {
  const std::string model = GetParam();
  std::vector<GenerationRequest> requests;
  std::mt19937 rng(std::random_device{}());
  for (int64_t len : {50, 45, 40, 35, 30}) {
    GenerationRequest r;
    for (int64_t i = 0; i < len; ++i)
      r.prompt_token_ids.push_back(static_cast<int32_t>(rng() % 256));
    r.params.temperature = 0;
    r.params.max_tokens = 16;
    r.params.ignore_eos = true;
    requests.push_back(std::move(r));
  }
  const GenerationResult reference = generate(base_config(model), requests);
  EngineConfig c = base_config(model);
  c.tensor_parallel_size = 4;  // tiny-llama's 2 KV heads: T=4 puts each on a DCP group of 2
  c.decode_context_parallel_size = 2;
  c.block_size = 4;
  const GenerationResult probe = generate(c, {requests[0]});
  // 13 blocks of B·N = 8 tokens: one max_model_len request and a little more.
  c.kv_cache_memory = probe.stats.kv_bytes_per_rank / probe.stats.blocks_per_rank * 13;
  const GenerationResult got = generate(c, requests);
  EXPECT_GT(got.stats.preemptions, 0);
  for (size_t i = 0; i < requests.size(); ++i) {
    EXPECT_EQ(got.outputs[i].output_token_ids, reference.outputs[i].output_token_ids) << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Builtins, GreedyConsistency,
                         ::testing::Values("builtin:tiny-llama", "builtin:tiny-qwen2",
                                           "builtin:tiny-deepseek-v2", "builtin:tiny-deepseek-v3"),
                         [](const auto& param_info) {
                           std::string n = param_info.param.substr(param_info.param.find(':') + 1);
                           for (char& ch : n) ch = ch == '-' ? '_' : ch;
                           return n;
                         });

TEST(EngineConfigErrors, RejectedAtStartUpWithTheNumbers) {
  EngineConfig c = base_config("builtin:tiny-llama");
  c.tensor_parallel_size = 4;
  c.decode_context_parallel_size = 3;
  EXPECT_THROW(generate(c, random_requests(*std::make_unique<std::mt19937>(1))), Error);
  c = base_config("builtin:tiny-llama");
  c.block_size = 16;
  c.cp_kv_cache_interleave_size = 3;
  EXPECT_THROW(resolve_engine_config(c), Error);
  c = base_config("builtin:tiny-llama");
  c.kv_cache_memory = 1024;  // not one request of max_model_len
  try {
    std::mt19937 rng(2);
    generate(c, random_requests(rng));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--kv-cache-memory"), std::string::npos) << e.what();
  }
}

TEST(EngineRequests, TooLongPromptOrUnknownTokenIsRejectedAndOthersFinish) {
  EngineConfig c = base_config("builtin:tiny-qwen2");
  std::mt19937 rng(std::random_device{}());
  auto requests = random_requests(rng);
  requests[1].prompt_token_ids.assign(kMaxModelLen + 5, 7);
  requests[3].prompt_token_ids[0] = 100000;  // outside the vocabulary
  const GenerationResult r = generate(c, requests);
  EXPECT_NE(r.outputs[1].finish_reason.find("rejected"), std::string::npos)
      << r.outputs[1].finish_reason;
  EXPECT_NE(r.outputs[3].finish_reason.find("vocabulary"), std::string::npos)
      << r.outputs[3].finish_reason;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (i == 1 || i == 3) continue;
    EXPECT_EQ(r.outputs[i].output_token_ids.size(),
              static_cast<size_t>(requests[i].params.max_tokens));
  }
}

}  // namespace
}  // namespace ctxpar::engine

namespace ctxpar::engine {
namespace {

// bf16 weights (f32 activations) run every built-in with DCP, and their first logits stay
// within bf16 rounding of the f32 run's. In the MoE models a near tie between two experts'
// router scores can flip under that rounding and move the logits far (seen in ~3% of random
// prompts of tiny-deepseek-v3), so each model runs five prompts and at least three must be
// close; a broken bf16 path fails all five.
TEST(Bf16Weights, EveryBuiltinRunsWithDcpCloseToF32) {
  std::mt19937 rng(std::random_device{}());
  std::vector<GenerationRequest> requests(5);
  for (GenerationRequest& r : requests) {
    for (int i = 0; i < 20; ++i) r.prompt_token_ids.push_back(static_cast<int32_t>(rng() % 256));
    r.params.temperature = 0;
    r.params.max_tokens = 2;
    r.params.ignore_eos = true;
  }
  RunOptions record;
  record.record_logits = true;
  for (const char* model : kDenseBuiltins) {
    SCOPED_TRACE(model);
    EngineConfig c = base_config(model);
    c.tensor_parallel_size = 4;
    c.decode_context_parallel_size = 2;
    const GenerationResult f32 = generate(c, requests, record);
    c.dtype = "bfloat16";
    c.kv_cache_dtype = "bfloat16";
    const GenerationResult b16 = generate(c, requests, record);
    const std::vector<double> errors = first_logit_errors(b16, f32);
    const auto close =
        std::count_if(errors.begin(), errors.end(), [](double e) { return e <= 5e-2; });
    EXPECT_GE(close, 3) << "relative errors " << testing::PrintToString(errors);
  }
}

}  // namespace
}  // namespace ctxpar::engine

namespace ctxpar::engine {
namespace {

// --kv-cache-dtype fp8 (e4m3, scale 1) on the GQA and MLA built-ins, f32 weights: the first
// logits stay near the f32 cache's, and every (T, N, I, B, plan) agrees with T = N = 1 through
// chunked prefill (a later chunk reads the earlier chunks' e4m3 keys from the cache while its
// own tokens' keys are rounded the same way). Not exactly: another (T, N) sums the hidden
// states in another order, and e4m3 rounds a value an f32 ulp from a midpoint either way, a
// step of 1/16. Seen over 15 runs: first logits 1e-6 apart (median), 8.5e-4 at most; greedy
// tokens identical but for a near tie in about one run in ten (tiny-deepseek-v3). A broken
// sharded path moves every prompt by far more (sparse models: tests/dsa_cp). fp8_e5m2 is refused.
TEST(Fp8KvCache, GqaAndMlaModelsAgreeAcrossParallelShapes) {
  const auto seed = test_support::test_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  const auto requests = random_requests(rng);
  RunOptions record;
  record.record_logits = true;
  for (const char* model : kDenseBuiltins) {
    SCOPED_TRACE(model);
    EngineConfig c = base_config(model);
    const GenerationResult f32 = generate(c, requests, record);
    c.kv_cache_dtype = "fp8";
    const GenerationResult fp8 = generate(c, requests, record);
    EXPECT_EQ(fp8.stats.kv_bytes_per_rank / fp8.stats.blocks_per_rank * 4,
              f32.stats.kv_bytes_per_rank / f32.stats.blocks_per_rank)
        << "an e4m3 block is a quarter of an f32 block";
    const std::vector<double> errors = first_logit_errors(fp8, f32);
    // As for bf16 weights above: in the MoE models a near tie of two experts' router scores can
    // flip under the rounding and move a prompt's logits far, so five of the seven must be
    // close (GQA: 0.02-0.05 seen, MLA 0.002-0.05 with one prompt in seven at 0.1).
    std::vector<double> sorted = errors;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_GT(sorted.back(), 0.0) << "the e4m3 cache must round something";
    EXPECT_LE(sorted[4], 0.1) << "relative errors " << testing::PrintToString(errors);
    const model::ModelConfig config = model::resolve_model_config(model);
    int ran = 0;
    for (const Shape& s : std::vector<Shape>{{4, 2, 1, 16, "ag_rs"},
                                             {8, 4, 2, 4, "a2a"},
                                             {4, 4, 4, 8, "ag_rs"},
                                             {6, 3, 1, 2, "a2a"}}) {
      if (!shape_applies(config, s)) continue;
      ++ran;
      SCOPED_TRACE(
          fmt::format("T={} N={} I={} B={} {}", s.tp, s.dcp, s.interleave, s.block, s.plan));
      c.tensor_parallel_size = s.tp;
      c.decode_context_parallel_size = s.dcp;
      c.cp_kv_cache_interleave_size = s.interleave;
      c.block_size = s.block;
      c.dcp_comm_backend = s.plan;
      const GenerationResult got = generate(c, requests, record);
      // All but one prompt within 1e-2: in the MoE models the other summation order can move a
      // value across an e4m3 midpoint and flip a router near tie, which moves that prompt's
      // logits far (0.075 for one prompt of tiny-deepseek-v2 at two shapes, seed 3548481543).
      const std::vector<double> shape_errors = first_logit_errors(got, fp8);
      const auto close = std::count_if(shape_errors.begin(), shape_errors.end(),
                                       [](double e) { return e <= 1e-2; });
      EXPECT_GE(close, static_cast<int64_t>(requests.size()) - 1)
          << "relative errors " << testing::PrintToString(shape_errors);
      int same = 0;
      for (size_t i = 0; i < requests.size(); ++i) {
        same += got.outputs[i].output_token_ids == fp8.outputs[i].output_token_ids;
      }
      EXPECT_GE(same, 5) << "requests with the T = N = 1 tokens, of " << requests.size();
    }
    EXPECT_GE(ran, 2) << "too few shapes apply to " << model;
  }
  EngineConfig e5m2 = base_config("builtin:tiny-llama");
  e5m2.kv_cache_dtype = "fp8_e5m2";
  try {
    generate(e5m2, {requests[0]});
    ADD_FAILURE() << "tiny-llama took --kv-cache-dtype fp8_e5m2";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "'fp8_e5m2' is not supported; use auto, float32, bfloat16, fp8 or fp8_e4m3"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ctxpar::engine
