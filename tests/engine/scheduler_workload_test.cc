// The scheduler under hundreds of random requests, with the FakeModel reading its tokens back
// through the block tables: every step's invariants, and every request's exact outcome, with
// prefix caching off and on (prompts share prefixes, so cached blocks are hit and shared).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "ctxpar/engine/scheduler.h"
#include "engine/scheduler_harness.h"
#include "support/seeded_rng.h"

namespace ctxpar::engine::testing {
namespace {

struct LayoutCase {
  int n, b, i;
};
// N in {1, 2, 3, 4}; B from 1 to 8; I from 1 to B (B % I == 0), including I == B.
const LayoutCase kLayouts[] = {{1, 4, 1}, {1, 1, 1}, {2, 2, 1}, {2, 4, 2}, {2, 8, 8},
                               {3, 1, 1}, {3, 4, 4}, {3, 6, 2}, {4, 2, 1}, {4, 8, 2}};

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

TEST(SchedulerWorkload, RandomWorkloadsKeepEveryInvariantAndFinishExactly) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  int64_t partial_chunks = 0, preemptions = 0, restarts = 0, aborted = 0, rejected = 0;
  int64_t hit_tokens = 0;
  for (const LayoutCase& lc : kLayouts) {
    for (const auto& [chunked, caching] : {std::pair{true, false}, std::pair{false, false},
                                           std::pair{true, true}, std::pair{false, true}}) {
      SchedulerConfig config;
      config.layout = kv::DcpLayout(lc.n, lc.b, lc.i);
      config.enable_chunked_prefill = chunked;
      config.enable_prefix_caching = caching;
      config.max_num_seqs = static_cast<int32_t>(uniform(rng, 1, 12));
      config.max_model_len = uniform(rng, 24, 160);
      config.max_num_batched_tokens = uniform(rng, config.max_num_seqs, 64);
      if (!chunked) config.max_num_batched_tokens += config.max_model_len;
      // From "a couple of prompts" to "everything fits"; sometimes below max_model_len, so
      // the pool caps the request length and rejects prompts that fit max_model_len.
      const int64_t per_block = config.layout.tokens_per_virtual_block();
      const int64_t tokens = uniform(rng, config.max_model_len / 2, config.max_model_len * 8);
      const auto num_blocks = static_cast<int32_t>((tokens + per_block - 1) / per_block);
      SCOPED_TRACE(::testing::Message()
                   << "N=" << lc.n << " B=" << lc.b << " I=" << lc.i << " chunked=" << chunked
                   << " caching=" << caching << " seqs=" << config.max_num_seqs
                   << " budget=" << config.max_num_batched_tokens
                   << " max_model_len=" << config.max_model_len << " blocks=" << num_blocks);
      Scheduler scheduler(config, num_blocks);

      WorkloadShape shape;
      shape.num_requests = 300;
      shape.max_prompt_len = config.max_model_len * 2 / 3;
      shape.max_new_tokens = 48;
      shape.arrival_spread = uniform(rng, 0, 200);
      shape.shared_prefix_weight = 0.5;
      const std::vector<WorkloadRequest> workload = random_workload(rng, shape);
      DriveOptions options;
      options.abort_probability = 0.01;
      const DriveResult result = drive(scheduler, workload, rng, shape.vocab_size, options);
      ASSERT_FALSE(HasFailure());
      check_results(result, workload, scheduler, shape.vocab_size);
      ASSERT_FALSE(HasFailure());

      EXPECT_FALSE(scheduler.has_unfinished());
      EXPECT_EQ(scheduler.stats().num_free_blocks, num_blocks);
      partial_chunks += result.partial_chunks;
      preemptions += scheduler.stats().num_preemptions;
      restarts += result.restarts;
      hit_tokens += result.hit_tokens;
      for (const auto& [id, r] : result.finished) {
        aborted += r->status() == RequestStatus::kFinishedAborted;
        rejected += r->status() == RequestStatus::kFinishedRejected;
      }
    }
  }
  EXPECT_GT(partial_chunks, 0);
  EXPECT_GT(preemptions, 0);
  EXPECT_GT(restarts, 0);
  EXPECT_GT(aborted, 0);
  EXPECT_GT(rejected, 0);
  EXPECT_GT(hit_tokens, 0);
}

// The same requests through a pool that never runs out and one that forces preemption, with
// prefix caching off and on: all must give every request exactly the tokens it generates
// alone, so recompute is exact, and so is resuming on blocks cached before the preemption.
TEST(SchedulerWorkload, PreemptionByRecomputeGivesTheSameOutputs) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  int64_t resumed_hit_tokens = 0;
  for (const auto& [lc, caching] : [] {
         std::vector<std::pair<LayoutCase, bool>> cases;
         for (const LayoutCase& lc : kLayouts) {
           cases.emplace_back(lc, false);
           cases.emplace_back(lc, true);
         }
         return cases;
       }()) {
    SchedulerConfig config;
    config.layout = kv::DcpLayout(lc.n, lc.b, lc.i);
    config.enable_prefix_caching = caching;
    config.max_num_seqs = static_cast<int32_t>(uniform(rng, 4, 10));
    config.max_model_len = 96;
    config.max_num_batched_tokens = uniform(rng, config.max_num_seqs, 40);
    const int64_t per_block = config.layout.tokens_per_virtual_block();
    // Just over one max-length request: running requests must take turns.
    const auto small = static_cast<int32_t>((config.max_model_len + per_block - 1) / per_block +
                                            uniform(rng, 0, 3));
    const int32_t large = small * 2 * config.max_num_seqs;
    SCOPED_TRACE(::testing::Message()
                 << "N=" << lc.n << " B=" << lc.b << " I=" << lc.i << " caching=" << caching
                 << " seqs=" << config.max_num_seqs << " budget=" << config.max_num_batched_tokens
                 << " blocks=" << small);

    WorkloadShape shape;
    shape.num_requests = 100;
    shape.max_prompt_len = 40;
    shape.max_new_tokens = 50;
    shape.arrival_spread = 10;
    shape.eos_weight = 0.2;
    shape.shared_prefix_weight = 0.3;
    const std::vector<WorkloadRequest> workload = random_workload(rng, shape);

    Scheduler roomy(config, large);
    const DriveResult without = drive(roomy, workload, rng, shape.vocab_size, {});
    ASSERT_FALSE(HasFailure());
    EXPECT_EQ(roomy.stats().num_preemptions, 0);
    check_results(without, workload, roomy, shape.vocab_size);

    Scheduler tight(config, small);
    const DriveResult with = drive(tight, workload, rng, shape.vocab_size, {});
    ASSERT_FALSE(HasFailure());
    EXPECT_GT(tight.stats().num_preemptions, 0);
    EXPECT_GT(with.restarts, 0);
    check_results(with, workload, tight, shape.vocab_size);
    ASSERT_FALSE(HasFailure());

    int preempted_requests = 0;
    for (const auto& [id, r] : with.finished) {
      preempted_requests += r->num_preemptions() > 0;
      const Request& other = *without.finished.at(id);
      EXPECT_TRUE(std::equal(r->output_token_ids().begin(), r->output_token_ids().end(),
                             other.output_token_ids().begin(), other.output_token_ids().end()))
          << id;
    }
    EXPECT_GT(preempted_requests, 0);
    resumed_hit_tokens += tight.stats().prefix_cache.preempted_hits;
  }
  EXPECT_GT(resumed_hit_tokens, 0) << "no preempted request resumed on its cached blocks";
}

}  // namespace
}  // namespace ctxpar::engine::testing
