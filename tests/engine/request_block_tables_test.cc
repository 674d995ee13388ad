// Step plans on the wire and the block tables every rank rebuilds from them: a byte round trip
// for random plans, malformed buffers rejected, and the table deltas (new, extended,
// preempted, finished, a prefix-cache style start with num_computed > 0), with bad plans
// refused without changing anything.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/engine/request_block_tables.h"
#include "ctxpar/engine/step_plan.h"
#include "support/seeded_rng.h"

namespace ctxpar::engine {
namespace {

std::vector<int32_t> random_ids(std::mt19937_64& rng, size_t max_len) {
  std::vector<int32_t> ids(rng() % (max_len + 1));
  for (auto& x : ids) x = static_cast<int32_t>(rng() % 100000);
  return ids;
}

TEST(StepPlan, RoundTripsThroughBytes) {
  SEEDED_RNG(rng);
  for (int trial = 0; trial < 200; ++trial) {
    StepPlan plan;
    plan.command = rng() % 10 == 0 ? StepPlan::Command::kStop : StepPlan::Command::kRun;
    for (size_t i = rng() % 5; i > 0; --i) plan.finished.push_back(rng());
    for (size_t i = rng() % 5; i > 0; --i) plan.preempted.push_back(rng());
    for (size_t i = rng() % 8; i > 0; --i) {
      plan.entries.push_back({.request = rng(),
                              .num_computed = static_cast<int64_t>(rng() % 100000),
                              .token_ids = random_ids(rng, 40),
                              .new_table = rng() % 2 == 0,
                              .new_block_ids = random_ids(rng, 6),
                              .samples = rng() % 2 == 0,
                              .all_logits = rng() % 3 == 0});
    }
    const StepPlan back = StepPlan::decode(plan.encode());
    EXPECT_EQ(back.command, plan.command);
    EXPECT_EQ(back.finished, plan.finished);
    EXPECT_EQ(back.preempted, plan.preempted);
    ASSERT_EQ(back.entries.size(), plan.entries.size());
    for (size_t i = 0; i < plan.entries.size(); ++i) {
      const StepPlan::Entry& a = plan.entries[i];
      const StepPlan::Entry& b = back.entries[i];
      EXPECT_EQ(b.request, a.request);
      EXPECT_EQ(b.num_computed, a.num_computed);
      EXPECT_EQ(b.token_ids, a.token_ids);
      EXPECT_EQ(b.new_table, a.new_table);
      EXPECT_EQ(b.new_block_ids, a.new_block_ids);
      EXPECT_EQ(b.samples, a.samples);
      EXPECT_EQ(b.all_logits, a.all_logits);
    }
    // Every strict prefix is truncated, and a trailing byte is too many.
    std::vector<uint8_t> bytes = plan.encode();
    const size_t cut = rng() % bytes.size();
    EXPECT_THROW(StepPlan::decode({bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(cut)}),
                 Error);
    bytes.push_back(0);
    EXPECT_THROW(StepPlan::decode(bytes), Error);
  }
  std::vector<uint8_t> bad = StepPlan{}.encode();
  bad[0] = 7;  // no such command
  EXPECT_THROW(StepPlan::decode(bad), Error);
}

StepPlan::Entry entry(RequestHandle r, int64_t computed, int64_t tokens, bool new_table,
                      std::vector<int32_t> blocks) {
  return {.request = r,
          .num_computed = computed,
          .token_ids = std::vector<int32_t>(static_cast<size_t>(tokens), 1),
          .new_table = new_table,
          .new_block_ids = std::move(blocks),
          .samples = true};
}

std::vector<int32_t> table_of(const RequestBlockTables& t, RequestHandle r) {
  const auto ids = t.table(r);
  return {ids.begin(), ids.end()};
}

TEST(RequestBlockTables, AppliesDeltas) {
  RequestBlockTables tables(8);  // B·N = 8 positions per block
  StepPlan p1;
  p1.entries = {entry(1, 0, 10, true, {4, 9}), entry(2, 0, 3, true, {5})};
  auto batch = tables.apply(p1);
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0].block_table, (std::vector<int32_t>{4, 9}));
  EXPECT_EQ(batch[0].num_scheduled, 10);
  EXPECT_EQ(batch[1].block_table, (std::vector<int32_t>{5}));

  // Decodes: request 1 stays in its blocks, request 2 crosses into a new one (8 positions).
  StepPlan p2;
  p2.entries = {entry(1, 10, 1, false, {}), entry(2, 8, 1, false, {11})};
  batch = tables.apply(p2);
  EXPECT_EQ(batch[0].block_table, (std::vector<int32_t>{4, 9}));
  EXPECT_EQ(batch[1].block_table, (std::vector<int32_t>{5, 11}));
  EXPECT_EQ(batch[1].num_computed, 8);

  // Request 2 is preempted, request 1 finishes; request 2 comes back with a new table, and a
  // new request starts on cached blocks (num_computed > 0, the blocks cover its context).
  StepPlan p3;
  p3.finished = {1};
  p3.preempted = {2};
  p3.entries = {entry(2, 0, 9, true, {7, 3}), entry(3, 16, 2, true, {20, 21, 22})};
  batch = tables.apply(p3);
  EXPECT_TRUE(table_of(tables, 1).empty());
  EXPECT_EQ(table_of(tables, 2), (std::vector<int32_t>{7, 3}));
  EXPECT_EQ(batch[1].num_computed, 16);
  EXPECT_EQ(batch[1].block_table, (std::vector<int32_t>{20, 21, 22}));
  EXPECT_EQ(tables.num_requests(), 2u);
}

TEST(RequestBlockTables, RefusesPlansThatDoNotFitAndChangesNothing) {
  RequestBlockTables tables(4);
  StepPlan start;
  start.entries = {entry(1, 0, 4, true, {0})};
  tables.apply(start);
  const auto refused = [&](StepPlan plan, const std::string& what) {
    try {
      tables.apply(plan);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
    EXPECT_EQ(table_of(tables, 1), (std::vector<int32_t>{0})) << "changed by a refused plan";
    EXPECT_EQ(tables.num_requests(), 1u);
  };
  StepPlan unknown;
  unknown.entries = {entry(9, 3, 1, false, {2})};
  refused(unknown, "does not hold");
  StepPlan short_table;
  short_table.entries = {entry(1, 4, 1, false, {})};  // position 4 needs a second block
  refused(short_table, "1 blocks of 4 positions for 5 tokens");
  StepPlan after_preemption;
  after_preemption.preempted = {1};
  after_preemption.entries = {entry(1, 4, 1, false, {3})};
  refused(after_preemption, "does not hold");
  StepPlan two;  // the second entry is bad: the first must not be applied either
  two.finished = {1};
  two.entries = {entry(5, 0, 2, true, {8}), entry(6, 0, 9, true, {1})};
  refused(two, "for 9 tokens");
  EXPECT_THROW(RequestBlockTables(0), Error);
}

}  // namespace
}  // namespace ctxpar::engine
