// Prefix caching in the scheduler, case by case: where a hit starts (whole virtual blocks,
// never the last token, for shared prefixes ending inside, at and past block boundaries),
// requests of one step sharing blocks, counters in tokens, eviction order under a tight pool,
// a preempted request resuming on its cached blocks, a hash that collides on purpose, and
// caching off. Outputs are checked through the FakeModel, which reads the KV back.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "ctxpar/engine/scheduler.h"
#include "engine/scheduler_harness.h"
#include "support/seeded_rng.h"

namespace ctxpar::engine::testing {
namespace {

constexpr int32_t kVocab = 64;

int64_t uniform(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

std::vector<int32_t> random_tokens(std::mt19937_64& rng, int64_t n) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = static_cast<int32_t>(uniform(rng, 0, kVocab - 1));
  return t;
}

kv::DcpLayout random_layout(std::mt19937_64& rng) {
  const int n = static_cast<int>(uniform(rng, 1, 4));
  const int i = static_cast<int>(uniform(rng, 1, 3));
  const int b = i * static_cast<int>(uniform(rng, 1, 3));
  return kv::DcpLayout(n, b, i);
}

SchedulerConfig base_config() {
  SchedulerConfig c;
  c.max_num_seqs = 8;
  return c;
}

WorkloadRequest request(std::string id, std::vector<int32_t> prompt, int64_t max_tokens,
                        int64_t arrival_step = 0) {
  WorkloadRequest w;
  w.id = std::move(id);
  w.prompt = std::move(prompt);
  w.params.max_tokens = max_tokens;
  w.params.ignore_eos = true;
  w.arrival_step = arrival_step;
  return w;
}

// Runs the requests through drive() (every step and every output checked) and returns what
// it saw.
DriveResult run_checked(const SchedulerConfig& config, int32_t num_blocks,
                        const std::vector<WorkloadRequest>& workload, std::mt19937_64& rng) {
  Scheduler s(config, num_blocks);
  DriveResult result = drive(s, workload, rng, kVocab, {});
  check_results(result, workload, s, kVocab);
  return result;
}

// The entry that started a request's (first) table.
const ScheduledEntry& first_entry(const DriveResult& result, const std::string& id) {
  return result.starts.at(id).front();
}

TEST(PrefixCacheScheduler, AHitIsTheLongestCachedRunOfWholeBlocksBeforeTheLastToken) {
  SEEDED_RNG(rng);
  for (int trial = 0; trial < 40; ++trial) {
    SchedulerConfig config = base_config();
    config.layout = random_layout(rng);
    const int64_t bn = config.layout.tokens_per_virtual_block();
    config.max_model_len = 12 * bn + 8;
    config.max_num_batched_tokens = config.max_model_len;
    // a runs alone first (prompt computed, one token sampled and never fed back), then b shares
    // its first `shared` tokens: one before, at and after a block boundary, or anywhere.
    const int64_t la = uniform(rng, 1, 6 * bn);
    const std::vector<int32_t> a = random_tokens(rng, la);
    const int64_t k = uniform(rng, 0, la / bn);
    const int64_t choices[] = {k * bn - 1, k * bn, k * bn + 1, uniform(rng, 0, la)};
    const int64_t shared = std::clamp<int64_t>(choices[trial % 4], 0, la);
    std::vector<int32_t> b(a.begin(), a.begin() + shared);
    const int64_t tail = uniform(rng, shared == 0 ? 1 : 0, 3 * bn);
    for (int64_t t = 0; t < tail; ++t) {
      // The first differing token makes the common prefix exactly `shared` tokens long.
      int32_t x = static_cast<int32_t>(uniform(rng, 0, kVocab - 1));
      if (t == 0 && shared < la) x = (a[static_cast<size_t>(shared)] + 1) % kVocab;
      b.push_back(x);
    }
    const auto lb = static_cast<int64_t>(b.size());
    SCOPED_TRACE(fmt::format("B*N={} a={} shared={} b={}", bn, la, shared, lb));

    const DriveResult run =
        run_checked(config, 64, {request("a", a, 1), request("b", b, 2, 3)}, rng);
    ASSERT_FALSE(HasFailure());
    const int64_t want = std::min({shared / bn, (lb - 1) / bn, la / bn}) * bn;
    const ScheduledEntry& eb = first_entry(run, "b");
    EXPECT_EQ(eb.num_computed_tokens, want);
    EXPECT_EQ(eb.num_new_tokens, lb - want) << "the rest of b is computed in one step";
    EXPECT_EQ(eb.new_token_ids, std::vector<int32_t>(b.begin() + want, b.end()));
    // b starts on a's blocks.
    const ScheduledEntry& ea = first_entry(run, "a");
    ASSERT_GE(ea.new_block_ids.size(), static_cast<size_t>(want / bn));
    EXPECT_TRUE(std::equal(ea.new_block_ids.begin(), ea.new_block_ids.begin() + want / bn,
                           eb.new_block_ids.begin()));
    EXPECT_EQ(run.hit_tokens, want);
  }
}

TEST(PrefixCacheScheduler, ARepeatedPromptRecomputesItsLastToken) {
  SEEDED_RNG(rng);
  SchedulerConfig config = base_config();
  config.layout = kv::DcpLayout(2, 2, 1);  // 4 positions per block id
  config.max_num_batched_tokens = 256;
  for (const int64_t len : {1, 3, 4, 5, 8, 9}) {
    const std::vector<int32_t> p = random_tokens(rng, len);
    const DriveResult run =
        run_checked(config, 32, {request("a", p, 3), request("b", p, 3, 10)}, rng);
    // Whole blocks before the last token: 4 positions of a 5- or 8-token prompt, 8 of 9.
    EXPECT_EQ(first_entry(run, "b").num_computed_tokens, (len - 1) / 4 * 4) << len;
  }
}

TEST(PrefixCacheScheduler, CountersAreTokensAndResumedRequestsCountApart) {
  SEEDED_RNG(rng);
  SchedulerConfig config = base_config();
  config.layout = kv::DcpLayout(1, 4, 1);
  config.max_num_batched_tokens = 256;
  Scheduler s(config, 64);
  const std::vector<int32_t> p = random_tokens(rng, 10);
  s.add_request("a", p, {});
  s.update(s.schedule(), std::vector<int32_t>{1});
  std::vector<int32_t> q = p;
  q.push_back(3);
  s.add_request("b", q, {});
  const SchedulerOutput out = s.schedule();
  ASSERT_EQ(out.entries.size(), 2u);  // a decodes, b starts after 8 cached tokens
  EXPECT_EQ(out.entries[1].num_computed_tokens, 8);
  const PrefixCacheStats st = s.stats().prefix_cache;
  EXPECT_EQ(st.requests, 2);
  EXPECT_EQ(st.queries, 10 + 11);
  EXPECT_EQ(st.hits, 8);
  EXPECT_EQ(st.preempted_requests, 0);
  EXPECT_EQ(st.preempted_queries, 0);
}

TEST(PrefixCacheScheduler, RequestsOfOneStepShareTheBlocksItComputes) {
  SEEDED_RNG(rng);
  SchedulerConfig config = base_config();
  config.layout = random_layout(rng);
  const int64_t bn = config.layout.tokens_per_virtual_block();
  config.max_model_len = 8 * bn;
  config.max_num_batched_tokens = 8 * bn;
  Scheduler s(config, 64);
  const std::vector<int32_t> a = random_tokens(rng, uniform(rng, bn, 3 * bn));
  std::vector<int32_t> b = a;
  for (int64_t t = uniform(rng, 1, bn); t > 0; --t) b.push_back(7);
  s.add_request("a", a, {});
  s.add_request("b", b, {});
  const SchedulerOutput out = s.schedule();
  ASSERT_EQ(out.entries.size(), 2u);
  const int64_t full = static_cast<int64_t>(a.size()) / bn;
  EXPECT_EQ(out.entries[1].num_computed_tokens, full * bn);
  for (int64_t j = 0; j < full; ++j) {
    const int32_t id = out.entries[0].new_block_ids[static_cast<size_t>(j)];
    EXPECT_EQ(out.entries[1].new_block_ids[static_cast<size_t>(j)], id);
    EXPECT_EQ(s.block_pool().ref_count(id), 2);
  }
  // The same through the FakeModel, which writes every entry's KV before any reads it.
  std::mt19937_64 drive_rng(rng());
  const DriveResult run =
      run_checked(config, 64, {request("a", a, 4), request("b", b, 4)}, drive_rng);
  EXPECT_EQ(run.hit_tokens, full * bn);
}

// a and b's prompts are cached, then c needs more blocks than were never used: the pool takes
// the least recently freed ones, a's, and keeps b's.
TEST(PrefixCacheScheduler, ATightPoolEvictsTheLeastRecentlyFreedPrefix) {
  SEEDED_RNG(rng);
  SchedulerConfig config = base_config();
  config.layout = kv::DcpLayout(2, 2, 1);  // 4 positions per block id
  config.max_model_len = 24;
  config.max_num_batched_tokens = 64;
  Scheduler s(config, 6);
  const std::vector<int32_t> a = random_tokens(rng, 8), b = random_tokens(rng, 8);
  const std::vector<int32_t> c = random_tokens(rng, 16);
  SamplingParams one;
  one.max_tokens = 1;  // the prompt's blocks only
  for (const auto& [id, prompt] : {std::pair{"a", a}, std::pair{"b", b}, std::pair{"c", c}}) {
    s.add_request(id, prompt, one);
    while (s.has_unfinished()) {
      const SchedulerOutput out = s.schedule();
      s.update(out, std::vector<int32_t>(out.entries.size(), 1));
    }
  }
  EXPECT_EQ(s.stats().num_used_blocks, 0);
  EXPECT_EQ(s.stats().num_free_blocks, 6) << "cached blocks nobody holds are free";
  EXPECT_EQ(s.stats().num_cached_blocks, 6) << "b's 2 and c's 4 (a's were evicted)";
  std::vector<int32_t> a2 = a, b2 = b;
  a2.push_back(5);
  b2.push_back(5);
  // b2 first: a2's fresh blocks would otherwise be taken from the front, where b's are.
  s.add_request("b2", b2, one);
  s.add_request("a2", a2, one);
  const SchedulerOutput out = s.schedule();
  ASSERT_EQ(out.entries.size(), 2u);
  EXPECT_EQ(out.entries[1].num_computed_tokens, 0) << "a's prefix was evicted";
  EXPECT_EQ(out.entries[0].num_computed_tokens, 8) << "b's prefix is kept";
}

// b is preempted while a grows; its full blocks stay cached (a takes b's tail block first),
// and b resumes after them instead of recomputing from 0, with the same outputs.
TEST(PrefixCacheScheduler, APreemptedRequestResumesOnItsCachedBlocks) {
  SEEDED_RNG(rng);
  SchedulerConfig config = base_config();
  config.layout = kv::DcpLayout(2, 2, 1);  // 4 positions per block id
  config.max_num_batched_tokens = 64;
  const std::vector<WorkloadRequest> workload = {request("a", random_tokens(rng, 4), 12),
                                                 request("b", random_tokens(rng, 6), 12)};
  Scheduler s(config, 5);
  const DriveResult result = drive(s, workload, rng, kVocab, {});
  check_results(result, workload, s, kVocab);
  EXPECT_GT(s.stats().num_preemptions, 0);
  EXPECT_EQ(result.finished.at("b")->num_preemptions(), 1);
  const PrefixCacheStats st = s.stats().prefix_cache;
  EXPECT_EQ(st.preempted_requests, 1);
  EXPECT_GT(st.preempted_hits, 0) << "b recomputed blocks that were still cached";
  EXPECT_EQ(st.preempted_hits % 4, 0);
  EXPECT_EQ(st.requests, 2);
  EXPECT_EQ(st.hits, 0);
}

// A test-only hash that names every block alike: every cached block is a candidate for every
// lookup, and only one whose tokens and parent are the asker's may be served.
kv::BlockHash colliding_hash(const kv::BlockHash*, std::span<const int32_t>,
                             std::span<const std::string>) {
  return kv::BlockHash{};
}

TEST(PrefixCacheScheduler, AHashThatCollidesOnPurposeNeverServesAnotherPromptsBlocks) {
  SEEDED_RNG(rng);
  for (int trial = 0; trial < 20; ++trial) {
    SchedulerConfig config = base_config();
    config.layout = random_layout(rng);
    config.block_hash = &colliding_hash;
    const int64_t bn = config.layout.tokens_per_virtual_block();
    config.max_model_len = 8 * bn;
    config.max_num_batched_tokens = 8 * bn;
    // b is a with one token changed: only the whole blocks before it may hit.
    const std::vector<int32_t> a = random_tokens(rng, uniform(rng, 1, 4 * bn));
    std::vector<int32_t> b = a;
    const auto changed = static_cast<size_t>(uniform(rng, 0, int64_t(a.size()) - 1));
    b[changed] = (b[changed] + 1) % kVocab;
    const DriveResult run =
        run_checked(config, 64, {request("a", a, 2), request("b", b, 2, 3)}, rng);
    const int64_t want =
        std::min(static_cast<int64_t>(changed) / bn, (int64_t(b.size()) - 1) / bn) * bn;
    EXPECT_EQ(first_entry(run, "b").num_computed_tokens, want)
        << "B*N=" << bn << " token " << changed << " of " << a.size() << " changed";
  }
  // Many requests sharing prefixes: hits still happen, and every output is exact. Small
  // virtual blocks (2, 4 or 6 positions), so that many shared prefixes cover whole ones.
  SchedulerConfig config = base_config();
  config.layout = kv::DcpLayout(static_cast<int>(uniform(rng, 1, 3)), 2, 1);
  config.block_hash = &colliding_hash;
  config.max_model_len = 96;
  config.max_num_batched_tokens = 48;
  WorkloadShape shape;
  shape.num_requests = 120;
  shape.max_prompt_len = 60;
  shape.shared_prefix_weight = 0.6;
  shape.vocab_size = kVocab;
  const std::vector<WorkloadRequest> workload = random_workload(rng, shape);
  Scheduler s(config, 200);
  const DriveResult result = drive(s, workload, rng, kVocab, {});
  check_results(result, workload, s, kVocab);
  EXPECT_GT(result.hit_tokens, 0);
}

TEST(PrefixCacheScheduler, OffItNeverHitsNorCaches) {
  SEEDED_RNG(rng);
  SchedulerConfig config = base_config();
  config.layout = random_layout(rng);
  config.enable_prefix_caching = false;
  const int64_t bn = config.layout.tokens_per_virtual_block();
  config.max_model_len = 8 * bn;
  config.max_num_batched_tokens = 8 * bn;
  const std::vector<int32_t> p = random_tokens(rng, uniform(rng, 2 * bn, 4 * bn));
  Scheduler s(config, 64);
  const DriveResult run = run_checked(config, 64, {request("a", p, 3), request("b", p, 3, 5)}, rng);
  EXPECT_EQ(first_entry(run, "b").num_computed_tokens, 0);
  EXPECT_EQ(run.hit_tokens, 0);
  s.add_request("c", p, {});
  s.update(s.schedule(), std::vector<int32_t>{1});
  EXPECT_EQ(s.stats().num_cached_blocks, 0);
  EXPECT_EQ(s.stats().prefix_cache.requests, 0) << "vLLM counts no lookups when caching is off";
  EXPECT_EQ(s.stats().prefix_cache.queries, 0);
}

}  // namespace
}  // namespace ctxpar::engine::testing
