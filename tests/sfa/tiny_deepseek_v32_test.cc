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
#include "ctxpar/model/parallel_validation.h"

namespace ctxpar::model {
namespace {

constexpr size_t kDecodeSteps = 6;

struct RunSpec {
  int tp = 1;
  int dcp = 1;
  int block_size = 16;
  int interleave = 1;
  attention::DcpCommPlan plan = attention::DcpCommPlan::kAllGatherReduceScatter;
  attention::SfaIndexerMode mode = attention::SfaIndexerMode::kReplicated;

  std::string describe() const {
    return fmt::format("T={} N={} B={} I={} {} {}", tp, dcp, block_size, interleave,
                       attention::dcp_comm_plan_name(plan), attention::sfa_indexer_mode_name(mode));
  }
};

struct Generation {
  std::vector<std::vector<int32_t>> tokens;  // per prompt, the greedy continuation
  double logit_spread = 0;                   // smallest max-min over the sampled rows
  bool finite = true;
};

// A tiny continuous-batching loop: every step schedules decodes first, then a random chunk
// of each unfinished prompt; the rows at the end of a request's known tokens are sampled
// greedily (argmax, ties to the lower id).
Generation generate(const ModelConfig& config, const RunSpec& spec,
                    const std::vector<std::vector<int32_t>>& prompts,
                    const std::vector<std::vector<int64_t>>& chunks) {
  ModelOptions options;
  options.block_size = spec.block_size;
  options.interleave = spec.interleave;
  options.comm_plan = spec.plan;
  options.sfa_indexer_mode = spec.mode;
  options.max_context_chunk = 48;  // several gather groups per prefill step
  const DummyWeights weights(1234);
  Generation result;
  result.tokens.resize(prompts.size());
  result.logit_spread = INFINITY;
  run_inprocess_ranks(spec.tp, [&](Communicator& world) {
    ParallelGroups groups(world, spec.tp, spec.dcp);
    ThreadPool pool(1);
    const ModelContext ctx{weights, groups, options, pool};
    CausalLM lm(config, ctx);
    const int32_t num_blocks = 256;
    lm.allocate_kv_cache(num_blocks);
    const kv::DcpLayout layout(spec.dcp, spec.block_size, spec.interleave);
    std::unique_ptr<attention::AttentionMetadataBuilder> builder =
        spec.dcp > 1 ? std::make_unique<attention::DcpMetadataBuilder>(layout, groups.dcp_rank())
                     : std::make_unique<attention::AttentionMetadataBuilder>(spec.block_size);
    kv::BlockPool blocks(num_blocks);
    std::vector<kv::BlockTable> tables;
    std::vector<std::vector<int32_t>> known = prompts;  // prompt + generated so far
    std::vector<int64_t> computed(prompts.size(), 0);
    std::vector<size_t> next_chunk(prompts.size(), 0);
    for (size_t i = 0; i < prompts.size(); ++i) tables.emplace_back(blocks, layout);
    for (;;) {
      std::vector<size_t> order;  // decodes first
      for (int pass = 0; pass < 2; ++pass) {
        for (size_t i = 0; i < prompts.size(); ++i) {
          const bool decoding = computed[i] >= static_cast<int64_t>(prompts[i].size());
          const bool done = known[i].size() == prompts[i].size() + kDecodeSteps;
          if (!done && decoding == (pass == 0)) order.push_back(i);
        }
      }
      if (order.empty()) break;
      std::vector<attention::ScheduledRequest> batch;
      std::vector<int32_t> ids;
      std::vector<int64_t> rows;
      std::vector<size_t> sampled;
      for (size_t i : order) {
        const int64_t n =
            computed[i] < static_cast<int64_t>(prompts[i].size()) ? chunks[i][next_chunk[i]++] : 1;
        CTXPAR_CHECK(tables[i].grow(computed[i] + n), "test pool too small");
        attention::ScheduledRequest r;
        r.num_computed = computed[i];
        r.num_scheduled = n;
        r.block_table.assign(tables[i].ids().begin(), tables[i].ids().end());
        batch.push_back(std::move(r));
        for (int64_t j = 0; j < n; ++j)
          ids.push_back(known[i][static_cast<size_t>(computed[i] + j)]);
        computed[i] += n;
        if (computed[i] == static_cast<int64_t>(known[i].size())) {
          rows.push_back(static_cast<int64_t>(ids.size()) - 1);
          sampled.push_back(i);
        }
      }
      const auto md = builder->build(batch);
      Tensor token_ids = Tensor::empty({static_cast<int64_t>(ids.size())}, DType::kI32);
      std::copy(ids.begin(), ids.end(), token_ids.data<int32_t>());
      Tensor logits_rows = Tensor::empty({static_cast<int64_t>(rows.size())}, DType::kI64);
      std::copy(rows.begin(), rows.end(), logits_rows.data<int64_t>());
      const Tensor logits = lm.forward(md, token_ids, logits_rows);
      for (size_t r = 0; r < sampled.size(); ++r) {
        const float* l = logits.data<float>() + static_cast<int64_t>(r) * logits.size(1);
        int32_t best = 0;
        float lo = l[0], hi = l[0];
        for (int32_t v = 0; v < logits.size(1); ++v) {
          if (!std::isfinite(l[v])) result.finite = false;
          if (l[v] > l[best]) best = v;
          lo = std::min(lo, l[v]);
          hi = std::max(hi, l[v]);
        }
        known[sampled[r]].push_back(best);
        if (world.rank() == 0) result.logit_spread = std::min<double>(result.logit_spread, hi - lo);
      }
    }
    if (world.rank() == 0) {
      for (size_t i = 0; i < prompts.size(); ++i) {
        result.tokens[i].assign(known[i].begin() + static_cast<int64_t>(prompts[i].size()),
                                known[i].end());
      }
    }
  });
  return result;
}

TEST(TinyDeepseekV32, GreedyTokensAreIdenticalAcrossParallelConfigs) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  const ModelConfig config = resolve_model_config("builtin:tiny-deepseek-v32");
  ASSERT_TRUE(config.is_sparse());
  // Prompts longer than index_topk (16), so the indexer drops keys; one shorter than it.
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::vector<int64_t>> chunks;
  for (int64_t len : {int64_t{37} + static_cast<int64_t>(rng() % 20), int64_t{5},
                      int64_t{20} + static_cast<int64_t>(rng() % 30)}) {
    prompts.emplace_back();
    for (int64_t i = 0; i < len; ++i) prompts.back().push_back(static_cast<int32_t>(rng() % 256));
    chunks.emplace_back();
    for (int64_t left = len; left > 0;) {
      const int64_t n = 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(left));
      chunks.back().push_back(n);
      left -= n;
    }
  }

  const Generation want = generate(config, RunSpec{}, prompts, chunks);
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
    const Generation got = generate(config, spec, prompts, chunks);
    ASSERT_TRUE(got.finite);
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(got.tokens[i], want.tokens[i]) << "prompt " << i;
    }
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
