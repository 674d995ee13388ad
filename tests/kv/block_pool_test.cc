#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kv/block_pool.h"

namespace ctxpar::kv {
namespace {

template <typename Fn>
std::string error_message(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected ctxpar::Error";
  return "";
}

TEST(BlockPool, FreshPoolHandsOutDistinctIdsInRange) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const auto n = static_cast<int32_t>(1 + rng() % 97);
  BlockPool pool(n);
  EXPECT_EQ(pool.num_blocks(), n);
  EXPECT_EQ(pool.free_count(), n);
  const auto ids = pool.allocate(n);
  ASSERT_TRUE(ids.has_value());
  ASSERT_EQ(static_cast<int32_t>(ids->size()), n);
  const std::set<int32_t> distinct(ids->begin(), ids->end());
  EXPECT_EQ(static_cast<int32_t>(distinct.size()), n);
  EXPECT_EQ(*distinct.begin(), 0);
  EXPECT_EQ(*distinct.rbegin(), n - 1);
  for (int32_t id : *ids) EXPECT_EQ(pool.ref_count(id), 1);
  EXPECT_EQ(pool.free_count(), 0);
  EXPECT_EQ(pool.used_count(), n);
}

TEST(BlockPool, ExhaustionIsAllOrNothing) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const auto n = static_cast<int32_t>(5 + rng() % 60);
  BlockPool pool(n);
  EXPECT_FALSE(pool.allocate(n + 1).has_value());
  EXPECT_EQ(pool.free_count(), n);
  int32_t held = 0;
  while (true) {
    const auto want = static_cast<int32_t>(1 + rng() % 9);
    std::vector<int32_t> out = {-5};  // allocate_into appends and leaves a failure untouched
    const bool ok = pool.allocate_into(want, out);
    if (!ok) {
      EXPECT_LT(n - held, want);
      EXPECT_EQ(out, std::vector<int32_t>{-5});
      EXPECT_EQ(pool.free_count(), n - held);
      break;
    }
    EXPECT_EQ(static_cast<int32_t>(out.size()), want + 1);
    held += want;
    EXPECT_EQ(pool.free_count(), n - held);
  }
  EXPECT_FALSE(pool.allocate(pool.free_count() + 1).has_value());
  const auto rest = pool.allocate(pool.free_count());
  ASSERT_TRUE(rest.has_value());
  EXPECT_EQ(pool.free_count(), 0);
  EXPECT_FALSE(pool.allocate(1).has_value());
  EXPECT_TRUE(pool.allocate(0).has_value());
  EXPECT_TRUE(pool.allocate(0)->empty());
  EXPECT_THROW(pool.allocate(-1), Error);
}

TEST(BlockPool, EmptyPoolNeverFits) {
  BlockPool pool(0);
  EXPECT_EQ(pool.free_count(), 0);
  EXPECT_FALSE(pool.allocate(1).has_value());
  EXPECT_TRUE(pool.allocate(0).has_value());
  EXPECT_THROW(pool.free(0), Error);
  EXPECT_THROW(BlockPool(-1), Error);
}

TEST(BlockPool, SharedBlockReturnsWhenTheLastHolderFrees) {
  BlockPool pool(4);
  const int32_t id = pool.allocate(1)->front();
  pool.touch(id);
  pool.touch(id);
  EXPECT_EQ(pool.ref_count(id), 3);
  pool.free(id);
  pool.free(id);
  EXPECT_EQ(pool.ref_count(id), 1);
  EXPECT_EQ(pool.free_count(), 3);
  pool.free(id);
  EXPECT_EQ(pool.ref_count(id), 0);
  EXPECT_EQ(pool.free_count(), 4);
}

TEST(BlockPool, MisuseThrowsNamingTheBlock) {
  BlockPool pool(6);
  const std::vector<int32_t> ids = *pool.allocate(3);
  pool.free(ids[1]);
  const std::string twice = error_message([&] { pool.free(ids[1]); });
  EXPECT_NE(twice.find("block " + std::to_string(ids[1])), std::string::npos) << twice;
  EXPECT_NE(twice.find("not allocated"), std::string::npos) << twice;
  const std::string never = error_message([&] { pool.free(5); });
  EXPECT_NE(never.find("block 5"), std::string::npos) << never;
  const std::string outside = error_message([&] { pool.free(6); });
  EXPECT_NE(outside.find("6"), std::string::npos) << outside;
  EXPECT_THROW(pool.free(-1), Error);
  EXPECT_THROW(pool.touch(ids[1]), Error);  // free blocks cannot be shared
  EXPECT_THROW(pool.touch(99), Error);
  EXPECT_THROW(pool.ref_count(6), Error);

  // A span that frees a block more often than it is held changes nothing.
  const int32_t before = pool.free_count();
  const std::vector<int32_t> repeated = {ids[0], ids[2], ids[0]};
  const std::string message = error_message([&] { pool.free(repeated); });
  EXPECT_NE(message.find("block " + std::to_string(ids[0])), std::string::npos) << message;
  EXPECT_EQ(pool.free_count(), before);
  EXPECT_EQ(pool.ref_count(ids[0]), 1);
  EXPECT_EQ(pool.ref_count(ids[2]), 1);
  // Held twice, it can be freed twice in one call.
  pool.touch(ids[0]);
  pool.free(repeated);
  EXPECT_EQ(pool.free_count(), 6);
}

// Random allocate / share / free against a model of who holds what.
TEST(BlockPool, RandomOperationsMatchAReferenceCountModel) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const auto n = static_cast<int32_t>(1 + rng() % 41);
  BlockPool pool(n);
  std::map<int32_t, int32_t> model;  // id -> holders, only ids currently held
  std::vector<int32_t> holders;      // one entry per holder, for random frees
  for (int step = 0; step < 3000; ++step) {
    const int op = static_cast<int>(rng() % 3);
    if (op == 0) {
      const auto want = static_cast<int32_t>(rng() % 5);
      const auto ids = pool.allocate(want);
      const auto free_in_model = n - static_cast<int32_t>(model.size());
      ASSERT_EQ(ids.has_value(), want <= free_in_model);
      if (!ids) continue;
      for (int32_t id : *ids) {
        ASSERT_TRUE(id >= 0 && id < n);
        ASSERT_EQ(model.count(id), 0u) << "block " << id << " handed out while held";
        model[id] = 1;
        holders.push_back(id);
      }
    } else if (op == 1 && !holders.empty()) {
      const int32_t id = holders[rng() % holders.size()];
      pool.touch(id);
      ++model[id];
      holders.push_back(id);
    } else if (op == 2 && !holders.empty()) {
      const size_t k = rng() % holders.size();
      const int32_t id = holders[k];
      holders.erase(holders.begin() + static_cast<std::ptrdiff_t>(k));
      pool.free(id);
      if (--model[id] == 0) model.erase(id);
    }
    ASSERT_EQ(pool.free_count(), n - static_cast<int32_t>(model.size()));
  }
  for (int32_t id = 0; id < n; ++id) {
    const auto it = model.find(id);
    EXPECT_EQ(pool.ref_count(id), it == model.end() ? 0 : it->second);
  }
  pool.free(holders);
  EXPECT_EQ(pool.free_count(), n);
}

TEST(BlockPool, SizedFromAMemoryBudget) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 50; ++trial) {
    // At most 2^20 blocks, so the pools stay small.
    const auto bytes_per_block = static_cast<int64_t>((1 << 12) + rng() % (1 << 20));
    const auto budget = static_cast<int64_t>(rng() % (int64_t{1} << 32));
    const BlockPool pool = BlockPool::from_memory_budget(budget, bytes_per_block);
    ASSERT_EQ(pool.num_blocks(), budget / bytes_per_block);
    ASSERT_LE(int64_t{pool.num_blocks()} * bytes_per_block, budget);
    ASSERT_GT(int64_t{pool.num_blocks() + 1} * bytes_per_block, budget);
  }
  EXPECT_EQ(BlockPool::from_memory_budget(99, 100).num_blocks(), 0);
  EXPECT_THROW(BlockPool::from_memory_budget(100, 0), Error);
  EXPECT_THROW(BlockPool::from_memory_budget(-1, 10), Error);
  EXPECT_THROW(BlockPool::from_memory_budget(std::numeric_limits<int64_t>::max(), 1), Error);
}

}  // namespace
}  // namespace ctxpar::kv
