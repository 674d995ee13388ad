#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kv/block_table.h"
#include "support/seeded_rng.h"

namespace ctxpar::kv {
namespace {

TEST(BlockTable, GrowsInVirtualBlocks) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const DcpLayout layout(3, 4, 2);  // 12 positions per block id
  BlockPool pool(50);
  BlockTable table(pool, layout);
  EXPECT_EQ(table.num_blocks(), 0);
  EXPECT_TRUE(table.ids().empty());
  EXPECT_TRUE(table.grow(0));
  EXPECT_EQ(table.num_blocks(), 0);
  int64_t tokens = 0;
  for (int step = 0; step < 20; ++step) {
    tokens += static_cast<int64_t>(rng() % 20);
    ASSERT_TRUE(table.grow(tokens));
    ASSERT_EQ(table.num_blocks(), (tokens + 11) / 12) << tokens;
    ASSERT_GE(table.capacity_tokens(), tokens);
    ASSERT_EQ(table.blocks_needed(tokens), 0);
    ASSERT_EQ(pool.free_count(), 50 - table.num_blocks());
  }
  const std::set<int32_t> distinct(table.ids().begin(), table.ids().end());
  EXPECT_EQ(static_cast<int64_t>(distinct.size()), table.num_blocks());
  // Never shrinks.
  const int64_t blocks = table.num_blocks();
  EXPECT_TRUE(table.grow(1));
  EXPECT_EQ(table.num_blocks(), blocks);
  EXPECT_THROW(table.grow(-1), Error);
  EXPECT_THROW(table.blocks_needed(-3), Error);
}

TEST(BlockTable, GrowingPastThePoolChangesNothing) {
  const DcpLayout layout(2, 4, 1);  // 8 positions per block id
  BlockPool pool(5);
  BlockTable a(pool, layout);
  BlockTable b(pool, layout);
  ASSERT_TRUE(a.grow(17));  // 3 blocks
  ASSERT_TRUE(b.grow(8));   // 1 block
  const std::vector<int32_t> before(b.ids().begin(), b.ids().end());
  EXPECT_EQ(b.blocks_needed(25), 3);
  EXPECT_FALSE(b.grow(25));  // needs 3 more, 1 free
  EXPECT_EQ(std::vector<int32_t>(b.ids().begin(), b.ids().end()), before);
  EXPECT_EQ(pool.free_count(), 1);
  EXPECT_FALSE(b.grow(int64_t{1} << 50));  // far beyond the pool: still just "no"
  EXPECT_TRUE(b.grow(16));
  EXPECT_EQ(pool.free_count(), 0);
  a.release();  // preempt a; b can now grow
  EXPECT_EQ(a.num_blocks(), 0);
  EXPECT_EQ(pool.free_count(), 3);
  EXPECT_TRUE(b.grow(40));
  EXPECT_EQ(pool.free_count(), 0);
  a.release();  // releasing an empty table is a no-op
  EXPECT_TRUE(a.grow(0));
}

TEST(BlockTable, DestructionAndMovesReturnEveryBlockOnce) {
  const DcpLayout layout(4, 2, 2);
  BlockPool pool(10);
  {
    BlockTable t(pool, layout);
    ASSERT_TRUE(t.grow(20));  // 3 blocks
    EXPECT_EQ(pool.free_count(), 7);
  }
  EXPECT_EQ(pool.free_count(), 10);

  std::vector<BlockTable> requests;
  for (int i = 0; i < 3; ++i) {
    requests.emplace_back(pool, layout);
    ASSERT_TRUE(requests.back().grow(8 * (i + 1)));
  }
  EXPECT_EQ(pool.free_count(), 4);
  BlockTable moved = std::move(requests[1]);
  EXPECT_EQ(moved.num_blocks(), 2);
  EXPECT_EQ(requests[1].num_blocks(), 0);  // NOLINT(bugprone-use-after-move): moved-from is empty
  requests.clear();
  EXPECT_EQ(pool.free_count(), 8);
  BlockTable other(pool, layout);
  ASSERT_TRUE(other.grow(1));
  other = std::move(moved);  // other's own block is returned, moved's two are kept
  EXPECT_EQ(other.num_blocks(), 2);
  EXPECT_EQ(pool.free_count(), 8);
}

TEST(BlockTable, SharedBlocksOutliveTheTable) {
  const DcpLayout layout(2, 4, 4);
  BlockPool pool(3);
  int32_t shared = -1;
  {
    BlockTable t(pool, layout);
    ASSERT_TRUE(t.grow(8));
    shared = t.ids()[0];
    pool.touch(shared);  // e.g. a cached prefix keeps it
  }
  EXPECT_EQ(pool.ref_count(shared), 1);
  EXPECT_EQ(pool.free_count(), 2);
  pool.free(shared);
  EXPECT_EQ(pool.free_count(), 3);
}

}  // namespace
}  // namespace ctxpar::kv
