// builtin:tiny-deepseek-v32 with dummy weights end to end: prompts longer than index_topk are
// prefilled in chunks (mixed batches) and decoded greedily; the tokens are identical for every
// (T, N = T, I, B, merge plan, indexer mode), the logits finite and not degenerate. The KV
// accounting reports both caches, and sparse misconfigurations are rejected with the rule.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <set>
#include <string>

#include "ctxpar/attention/context_parallel/dcp_metadata_builder.h"
#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/core/error.h"
#include "ctxpar/kv/block_pool.h"
#include "ctxpar/kv/block_table.h"
#include "ctxpar/model/causal_lm.h"
#include "ctxpar/model/dummy_weights.h"
#include "ctxpar/model/kv_cache_plan.h"
#include "ctxpar/model/parallel_validation.h"
#include "greedy_generation.h"
#include "support/seeded_rng.h"

namespace ctxpar::model {
namespace {

using sfa_test::Generation;
using sfa_test::RunSpec;

class SparseModelGreedy : public ::testing::TestWithParam<const char*> {};

// DeepSeek-V3.2 and GLM-5 (pair-RoPE indexer, full / shared / full indexer layers).
TEST_P(SparseModelGreedy, GreedyTokensAreIdenticalAcrossParallelConfigs) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(fmt::format("{} seed {}", GetParam(), seed));
  std::mt19937 rng(seed);
  const ModelConfig config = resolve_model_config(GetParam());
  ASSERT_TRUE(config.is_sparse());
  const sfa_test::PromptSet prompts = sfa_test::make_prompts(rng);

  const Generation want = sfa_test::generate_inprocess(config, RunSpec{}, prompts);
  ASSERT_TRUE(want.finite);
  EXPECT_GT(want.logit_spread, 1e-2) << "dummy-weight logits must not be flat";
  std::set<int32_t> distinct;
  for (const auto& t : want.tokens) distinct.insert(t.begin(), t.end());
  EXPECT_GT(distinct.size(), 1u) << "greedy tokens should not all be one id";

  using Mode = attention::SfaIndexerMode;
  using Plan = attention::DcpCommPlan;
  const std::vector<RunSpec> specs = {
      {2, 1, 16, 1, Plan::kAllGatherReduceScatter, Mode::kReplicated},
      {2, 2, 1, 1, Plan::kAllToAll, Mode::kReplicated},
      {2, 2, 16, 2, Plan::kAllGatherReduceScatter, Mode::kSharded},
      {4, 4, 16, 16, Plan::kAllToAll, Mode::kReplicated},
      {4, 4, 64, 1, Plan::kAllGatherReduceScatter, Mode::kSharded},
      {4, 4, 1, 1, Plan::kAllToAll, Mode::kSharded},
      {8, 8, 16, 1, Plan::kAllGatherReduceScatter, Mode::kReplicated},
      {8, 8, 64, 64, Plan::kAllToAll, Mode::kSharded},
  };
  for (const RunSpec& spec : specs) {
    SCOPED_TRACE(spec.describe());
    const Generation got = sfa_test::generate_inprocess(config, spec, prompts);
    ASSERT_TRUE(got.finite);
    for (size_t i = 0; i < prompts.prompts.size(); ++i) {
      EXPECT_EQ(got.tokens[i], want.tokens[i]) << "prompt " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SparseModelGreedy,
                         ::testing::Values("builtin:tiny-deepseek-v32", "builtin:tiny-glm5"),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           return std::string(param.param).find("glm5") != std::string::npos
                                      ? std::string("tiny_glm5")
                                      : std::string("tiny_deepseek_v32");
                         });

// GLM-5's shared layers keep only the latent: the full layers' index keys are the only
// replicated cache, and the plan counts them alone.
TEST(TinyGlm5, SharedLayersKeepNoIndexKeys) {
  const ModelConfig config = resolve_model_config("builtin:tiny-glm5");
  const DummyWeights weights(3);
  for (int n : {1, 2}) {
    SCOPED_TRACE(fmt::format("N=T={}", n));
    std::vector<kv::KvCacheSpec> specs;
    run_inprocess_ranks(n, [&](Communicator& world) {
      ParallelGroups groups(world, n, n);
      ThreadPool pool(1);
      ModelOptions options;
      CausalLM lm(config, ModelContext{weights, groups, options, pool});
      if (world.rank() == 0) specs = lm.kv_cache_specs();
    });
    // Layers full, shared, full: latent + keys, latent, latent + keys.
    ASSERT_EQ(specs.size(), 5u);
    EXPECT_EQ(specs[0].kind, kv::KvCacheKind::kMla);
    EXPECT_EQ(specs[1].kind, kv::KvCacheKind::kIndexer);
    EXPECT_EQ(specs[2].kind, kv::KvCacheKind::kMla);
    EXPECT_EQ(specs[3].kind, kv::KvCacheKind::kMla);
    EXPECT_EQ(specs[4].kind, kv::KvCacheKind::kIndexer);
    EXPECT_EQ(specs[1].sharded_by_dcp, false);
    const auto planned = kv_cache_specs_for(config, n, n, DType::kF32);
    ASSERT_EQ(planned.size(), specs.size());
    for (size_t i = 0; i < specs.size(); ++i) EXPECT_EQ(planned[i].describe(), specs[i].describe());
  }
}

TEST(TinyDeepseekV32, KvAccountingReportsLatentAndIndexerCaches) {
  const ModelConfig config = resolve_model_config("builtin:tiny-deepseek-v32");
  const int64_t latent = config.mla.kv_lora_rank + config.mla.qk_rope_head_dim;
  const int64_t index_dim = config.indexer.index_head_dim;
  const int64_t budget = int64_t{8} << 20;
  const DummyWeights weights(7);
  const auto specs_of = [&](int n, attention::SfaIndexerMode mode, int32_t blocks,
                            int64_t* allocated) {
    ModelOptions options;
    options.sfa_indexer_mode = mode;
    std::vector<kv::KvCacheSpec> specs;
    run_inprocess_ranks(n, [&](Communicator& world) {
      ParallelGroups groups(world, n, n);
      ThreadPool pool(1);
      CausalLM lm(config, ModelContext{weights, groups, options, pool});
      lm.allocate_kv_cache(blocks);
      if (world.rank() == 0) {
        specs = lm.kv_cache_specs();
        *allocated = lm.kv_cache_bytes();
      }
    });
    return specs;
  };
  for (int n : {1, 2, 4}) {
    for (auto mode :
         {attention::SfaIndexerMode::kReplicated, attention::SfaIndexerMode::kSharded}) {
      SCOPED_TRACE(fmt::format("N=T={} {}", n, attention::sfa_indexer_mode_name(mode)));
      const kv::DcpLayout layout(n, 16, 1);
      int64_t allocated = 0;
      const auto specs = specs_of(n, mode, 3, &allocated);
      ASSERT_EQ(specs.size(), static_cast<size_t>(2 * config.num_hidden_layers));
      const bool replicated = mode == attention::SfaIndexerMode::kReplicated || n == 1;
      for (const kv::KvCacheSpec& s : specs) {
        if (s.kind == kv::KvCacheKind::kMla) {
          EXPECT_EQ(s.head_dim, latent);
          EXPECT_TRUE(s.sharded_by_dcp);
        } else {
          ASSERT_EQ(s.kind, kv::KvCacheKind::kIndexer);
          EXPECT_EQ(s.head_dim, index_dim);
          EXPECT_EQ(s.sharded_by_dcp, !replicated);
        }
      }
      // Per block id and rank: B latent rows, and B·N (replicated) or B (sharded) index keys.
      const int64_t per_block =
          config.num_hidden_layers * 4 * 16 * (latent + (replicated ? n : 1) * index_dim);
      const kv::KvCapacity cap = kv::plan_kv_capacity(budget, layout, specs);
      EXPECT_EQ(cap.bytes_per_block, per_block);
      EXPECT_EQ(allocated, 3 * per_block) << "allocated bytes follow the specs";
      // Tokens the group holds for the same per-rank budget: N times the N = 1 figure only
      // when nothing is replicated.
      const int64_t single =
          budget / (config.num_hidden_layers * 4 * 16 * (latent + index_dim)) * 16;
      if (replicated) {
        EXPECT_LE(cap.token_capacity, n * single);
        if (n > 1) {
          EXPECT_GT(cap.token_capacity, single);
        }
      } else {
        EXPECT_EQ(cap.token_capacity, n * single);
      }
    }
  }
}

TEST(TinyDeepseekV32, MisconfigurationsAreRejectedWithTheRule) {
  const ModelConfig config = resolve_model_config("builtin:tiny-deepseek-v32");
  // DCP for sparse attention needs N == T.
  try {
    validate_for_parallel(config, 4, 2);
    ADD_FAILURE() << "N=2 T=4 was accepted for a sparse model";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("N == T"), std::string::npos) << e.what();
  }
  const DummyWeights weights(1);
  ModelOptions options;
  EXPECT_THROW(
      run_inprocess_ranks(4,
                          [&](Communicator& world) {
                            ParallelGroups groups(world, 4, 2);
                            ThreadPool pool(1);
                            CausalLM lm(config, ModelContext{weights, groups, options, pool});
                          }),
      Error);
  // The indexer mode is one of two names.
  try {
    attention::parse_sfa_indexer_mode("sparse");
    ADD_FAILURE() << "an unknown indexer mode was accepted";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'sparse'"), std::string::npos) << what;
    EXPECT_NE(what.find("replicated"), std::string::npos) << what;
    EXPECT_NE(what.find("sharded"), std::string::npos) << what;
  }
  EXPECT_EQ(attention::parse_sfa_indexer_mode("sharded"), attention::SfaIndexerMode::kSharded);
  EXPECT_EQ(attention::parse_sfa_indexer_mode("replicated"),
            attention::SfaIndexerMode::kReplicated);
  // The indexer reads the q LoRA activation: a sparse model without one is refused.
  ModelConfig no_lora = config;
  no_lora.mla.q_lora_rank = 0;
  try {
    run_inprocess_ranks(1, [&](Communicator& world) {
      ParallelGroups groups(world, 1, 1);
      ThreadPool pool(1);
      CausalLM lm(no_lora, ModelContext{weights, groups, options, pool});
    });
    ADD_FAILURE() << "a sparse model without q LoRA was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("q_lora_rank"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ctxpar::model
