#include <gtest/gtest.h>

#include <algorithm>
#include <list>
#include <random>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kv/free_block_queue.h"
#include "support/seeded_rng.h"

namespace ctxpar::kv {
namespace {

TEST(FreeBlockQueue, StartsWithEveryIdInOrder) {
  FreeBlockQueue q(5);
  EXPECT_EQ(q.size(), 5);
  EXPECT_EQ(q.ids(), (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(q.pop_front(), 0);
  q.remove(3);  // the middle
  q.remove(4);  // the tail
  q.push_back(0);
  EXPECT_EQ(q.ids(), (std::vector<int32_t>{1, 2, 0}));
  EXPECT_THROW(q.push_back(1), Error) << "already queued";
  EXPECT_THROW(q.remove(3), Error) << "not queued";
  EXPECT_THROW(q.push_back(5), Error) << "outside";
  FreeBlockQueue empty(0);
  EXPECT_THROW(empty.pop_front(), Error);
  EXPECT_THROW(FreeBlockQueue(-1), Error);
}

// Random pops, pushes and removals against std::list.
TEST(FreeBlockQueue, RandomOperationsMatchAList) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const auto n = static_cast<int32_t>(1 + rng() % 50);
  FreeBlockQueue q(n);
  std::list<int32_t> model;
  for (int32_t i = 0; i < n; ++i) model.push_back(i);
  std::vector<int32_t> out;  // ids not queued
  for (int step = 0; step < 5000; ++step) {
    const int op = static_cast<int>(rng() % 3);
    if (op == 0 && !model.empty()) {
      ASSERT_EQ(q.pop_front(), model.front());
      out.push_back(model.front());
      model.pop_front();
    } else if (op == 1 && !out.empty()) {
      const size_t k = rng() % out.size();
      q.push_back(out[k]);
      model.push_back(out[k]);
      out.erase(out.begin() + static_cast<std::ptrdiff_t>(k));
    } else if (op == 2 && !model.empty()) {
      auto it = model.begin();
      std::advance(it, rng() % model.size());
      q.remove(*it);
      out.push_back(*it);
      model.erase(it);
    }
    ASSERT_EQ(q.size(), static_cast<int32_t>(model.size()));
    for (const int32_t id : out) ASSERT_FALSE(q.contains(id));
  }
  EXPECT_EQ(q.ids(), std::vector<int32_t>(model.begin(), model.end()));
}

}  // namespace
}  // namespace ctxpar::kv
