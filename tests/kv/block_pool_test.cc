#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <list>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kv/block_pool.h"
#include "ctxpar/kv/block_table.h"
#include "support/seeded_rng.h"

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
  const uint32_t seed = test_support::test_seed();
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
  const uint32_t seed = test_support::test_seed();
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
  const uint32_t seed = test_support::test_seed();
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
  const uint32_t seed = test_support::test_seed();
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

BlockHash hash_named(uint8_t name) {
  BlockHash h;
  h.bytes[0] = name;
  return h;
}

TEST(BlockPool, TheLeastRecentlyFreedBlockIsReusedFirst) {
  BlockPool pool(6);
  ASSERT_TRUE(pool.allocate(6).has_value());
  const std::vector<int32_t> order = {3, 1, 5};
  pool.free(order);
  pool.free(0);
  EXPECT_EQ(*pool.allocate(2), (std::vector<int32_t>{3, 1}));
  pool.free(3);  // goes behind 5 and 0
  EXPECT_EQ(*pool.allocate(3), (std::vector<int32_t>{5, 0, 3}));
}

TEST(BlockPool, ATableFreesItsTailFirst) {
  const DcpLayout layout(2, 2, 1);  // 4 positions per block id
  BlockPool pool(8);
  BlockTable table(pool, layout);
  ASSERT_TRUE(table.grow(12));
  const std::vector<int32_t> ids(table.ids().begin(), table.ids().end());
  ASSERT_EQ(ids, (std::vector<int32_t>{0, 1, 2}));
  table.release();
  // Never-used blocks 3..7 come first, then the sequence from its tail back to its head.
  EXPECT_EQ(*pool.allocate(8), (std::vector<int32_t>{3, 4, 5, 6, 7, 2, 1, 0}));
}

// A table caches its full blocks in order, each after the one before, and a second table can
// start on them: found through the pool from the first block on, they are held twice.
TEST(BlockPool, TablesCacheFullBlocksAndStartOnCachedOnes) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const DcpLayout layout(2, 2, 1);  // 4 positions per block id
  BlockPool pool(16);
  std::vector<int32_t> tokens(10);
  for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % 100);
  std::vector<BlockHash> hashes;
  for (size_t j = 0; j < 2; ++j) {
    hashes.push_back(sha256_block_hash(j == 0 ? nullptr : &hashes.back(),
                                       std::span(tokens).subspan(4 * j, 4), {}));
  }
  BlockTable a(pool, layout);
  ASSERT_TRUE(a.grow(10));
  a.cache_full_blocks(7, hashes, tokens);  // positions 0..6: one full block
  EXPECT_EQ(a.num_cached_blocks(), 1);
  a.cache_full_blocks(10, hashes, tokens);  // 0..9: two; the third is partial
  EXPECT_EQ(a.num_cached_blocks(), 2);
  EXPECT_EQ(pool.cached_count(), 2);
  EXPECT_FALSE(pool.is_cached(a.ids()[2]));
  EXPECT_THROW(a.cache_full_blocks(13, hashes, tokens), Error) << "beyond the table";
  const std::vector<BlockHash> one(hashes.begin(), hashes.begin() + 1);
  BlockTable short_hashes(pool, layout);
  ASSERT_TRUE(short_hashes.grow(8));
  EXPECT_THROW(short_hashes.cache_full_blocks(8, one, tokens), Error) << "too few hashes";

  const auto first = pool.find_cached(hashes[0], -1, std::span(tokens).first(4));
  ASSERT_EQ(first, a.ids()[0]);
  const auto second = pool.find_cached(hashes[1], *first, std::span(tokens).subspan(4, 4));
  ASSERT_EQ(second, a.ids()[1]);
  BlockTable b(pool, layout);
  const std::vector<int32_t> hit = {*first, *second};
  b.append_cached(hit);
  EXPECT_EQ(b.num_cached_blocks(), 2);
  EXPECT_EQ(pool.ref_count(*first), 2);
  EXPECT_THROW(b.append_cached(hit), Error) << "cached blocks only start a table";
  ASSERT_TRUE(b.grow(12));
  a.release();
  b.release();
  short_hashes.release();
  EXPECT_EQ(pool.used_count(), 0);
  EXPECT_EQ(pool.cached_count(), 2) << "released into the cache, not away from it";
}

TEST(BlockPool, ACachedBlockOutlivesItsHoldersUntilItIsEvicted) {
  BlockPool pool(3);
  const std::vector<int32_t> tokens = {4, 8, 15, 16};
  const int32_t id = pool.allocate(1)->front();
  pool.cache(id, hash_named(1), -1, tokens);
  EXPECT_TRUE(pool.is_cached(id));
  EXPECT_EQ(pool.cached_count(), 1);
  EXPECT_EQ(pool.find_cached(hash_named(1), -1, tokens), id) << "held and cached";
  pool.free(id);
  EXPECT_EQ(pool.free_count(), 3) << "a cached block nobody holds counts as free";
  EXPECT_EQ(pool.find_cached(hash_named(1), -1, tokens), id) << "free and still cached";
  pool.touch(id);  // a hit takes it back out of the free queue
  EXPECT_EQ(pool.ref_count(id), 1);
  EXPECT_EQ(pool.free_count(), 2);
  pool.touch(id);  // a second holder
  EXPECT_EQ(pool.ref_count(id), 2);
  const std::vector<int32_t> twice = {id, id};
  pool.free(twice);
  // Allocating every block evicts it.
  ASSERT_TRUE(pool.allocate(3).has_value());
  EXPECT_FALSE(pool.is_cached(id));
  EXPECT_EQ(pool.cached_count(), 0);
  EXPECT_FALSE(pool.find_cached(hash_named(1), -1, tokens).has_value());
}

// A test-only "hash" that names many contents the same: the pool must still serve only the
// block whose tokens and parent are the asker's.
TEST(BlockPool, CollidingHashesNeverServeAnotherPromptsBlock) {
  BlockPool pool(8);
  const BlockHash same = hash_named(7);
  const std::vector<int32_t> a = {1, 2, 3}, b = {1, 2, 4}, c = {9, 9, 9};
  const std::vector<int32_t> ids = *pool.allocate(4);
  pool.cache(ids[0], same, -1, a);
  pool.cache(ids[1], same, -1, b);
  pool.cache(ids[2], same, ids[0], c);  // c after a
  pool.cache(ids[3], same, ids[1], c);  // c after b
  EXPECT_EQ(pool.find_cached(same, -1, a), ids[0]);
  EXPECT_EQ(pool.find_cached(same, -1, b), ids[1]);
  EXPECT_FALSE(pool.find_cached(same, -1, c).has_value()) << "c is never a first block";
  EXPECT_EQ(pool.find_cached(same, ids[0], c), ids[2]);
  EXPECT_EQ(pool.find_cached(same, ids[1], c), ids[3]);
  EXPECT_FALSE(pool.find_cached(same, ids[2], c).has_value());
  EXPECT_FALSE(pool.find_cached(same, -1, std::vector<int32_t>{1, 2}).has_value());
  EXPECT_FALSE(pool.find_cached(hash_named(8), -1, a).has_value());
}

// The parent is matched as the KV it holds now: a parent evicted and reused for other tokens
// (filed under a colliding hash) must not lead to its old children.
TEST(BlockPool, AChildOfAReusedParentIsNotServed) {
  BlockPool pool(2);
  const BlockHash same = hash_named(3);
  const std::vector<int32_t> first = {5, 6}, second = {7, 8}, other_first = {1, 1};
  const std::vector<int32_t> ids = *pool.allocate(2);
  const int32_t parent = ids[0], child = ids[1];
  pool.cache(parent, same, -1, first);
  pool.cache(child, same, parent, second);
  const std::vector<int32_t> parent_first = {parent, child};
  pool.free(parent_first);  // the parent is evicted before the child
  ASSERT_EQ(*pool.allocate(1), std::vector<int32_t>{parent});
  pool.cache(parent, same, -1, other_first);
  EXPECT_EQ(pool.find_cached(same, -1, other_first), parent);
  EXPECT_TRUE(pool.is_cached(child));
  EXPECT_FALSE(pool.find_cached(same, parent, second).has_value())
      << "the child's prefix was " << first[0] << "," << first[1] << ", not the parent's new one";
}

TEST(BlockPool, PrefixCacheMisuseThrowsNamingTheBlock) {
  BlockPool pool(4);
  const std::vector<int32_t> t = {1};
  const std::string free_block = error_message([&] { pool.cache(2, hash_named(0), -1, t); });
  EXPECT_NE(free_block.find("block 2"), std::string::npos) << free_block;
  const int32_t id = pool.allocate(1)->front();
  const int32_t next = pool.allocate(1)->front();
  const std::string bad_parent = error_message([&] { pool.cache(id, hash_named(0), next, t); });
  EXPECT_NE(bad_parent.find(std::to_string(next)), std::string::npos) << bad_parent;
  pool.cache(id, hash_named(0), -1, t);
  EXPECT_THROW(pool.cache(id, hash_named(0), -1, t), Error) << "cached twice";
  EXPECT_THROW(pool.cache(9, hash_named(0), -1, t), Error);
  const std::string uncached = error_message([&] { pool.touch(3); });
  EXPECT_NE(uncached.find("block 3"), std::string::npos) << uncached;
  pool.free(id);
  pool.free(next);
  EXPECT_THROW(pool.free(id), Error) << "double free of a cached block";
  EXPECT_THROW(pool.free(next), Error);
}

// Random allocate / touch / free / cache / find against a model of the free queue (a list in
// eviction order), the holders and the cache entries; hashes come from 4 values and tokens
// from a small alphabet, so collisions and duplicates are common.
TEST(BlockPool, RandomPrefixCacheOperationsMatchAModel) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const auto n = static_cast<int32_t>(1 + rng() % 24);
  BlockPool pool(n);
  struct Entry {
    uint8_t hash;
    int32_t parent;
    int64_t parent_generation;
    std::vector<int32_t> tokens;
  };
  std::list<int32_t> queue;
  for (int32_t id = 0; id < n; ++id) queue.push_back(id);
  std::vector<int32_t> refs(static_cast<size_t>(n), 0);
  std::vector<int64_t> generation(static_cast<size_t>(n), 0);
  std::vector<std::optional<Entry>> entries(static_cast<size_t>(n));
  std::vector<int32_t> holders;  // one entry per hold
  const auto pick = [&](auto&& keep) -> std::optional<int32_t> {
    std::vector<int32_t> ids;
    for (int32_t id = 0; id < n; ++id) {
      if (keep(id)) ids.push_back(id);
    }
    if (ids.empty()) return std::nullopt;
    return ids[rng() % ids.size()];
  };
  const auto random_tokens = [&] {
    return std::vector<int32_t>{static_cast<int32_t>(rng() % 2), static_cast<int32_t>(rng() % 2)};
  };
  const auto at = [](int32_t id) { return static_cast<size_t>(id); };
  for (int step = 0; step < 4000; ++step) {
    switch (rng() % 5) {
      case 0: {  // allocate from the front, evicting
        const auto want = static_cast<int32_t>(rng() % 4);
        const auto got = pool.allocate(want);
        ASSERT_EQ(got.has_value(), want <= static_cast<int32_t>(queue.size()));
        if (!got) break;
        for (const int32_t id : *got) {
          ASSERT_EQ(id, queue.front()) << "not the least recently freed block";
          queue.pop_front();
          entries[at(id)].reset();
          refs[at(id)] = 1;
          ++generation[at(id)];
          holders.push_back(id);
        }
        break;
      }
      case 1: {  // touch a held or cached block (a hit); a free uncached one throws
        const auto id = pick([&](int32_t b) { return refs[at(b)] > 0 || entries[at(b)]; });
        if (id) {
          pool.touch(*id);
          if (refs[at(*id)]++ == 0) queue.remove(*id);
          holders.push_back(*id);
        }
        const auto bad = pick([&](int32_t b) { return refs[at(b)] == 0 && !entries[at(b)]; });
        if (bad) {
          ASSERT_THROW(pool.touch(*bad), Error);
        }
        break;
      }
      case 2: {  // free a few holds, in a random order
        std::shuffle(holders.begin(), holders.end(), rng);
        const size_t k = std::min(holders.size(), static_cast<size_t>(rng() % 4));
        const std::vector<int32_t> ids(holders.end() - static_cast<std::ptrdiff_t>(k),
                                       holders.end());
        holders.resize(holders.size() - k);
        pool.free(ids);
        for (const int32_t id : ids) {
          if (--refs[at(id)] == 0) queue.push_back(id);
        }
        break;
      }
      case 3: {  // cache a held, uncached block after a cached parent or as a first block
        const auto id = pick([&](int32_t b) { return refs[at(b)] > 0 && !entries[at(b)]; });
        if (!id) break;
        const auto parent = rng() % 3 == 0 ? std::nullopt : pick([&](int32_t b) {
          return b != *id && entries[at(b)].has_value();
        });
        const auto hash = static_cast<uint8_t>(rng() % 4);
        const std::vector<int32_t> tokens = random_tokens();
        pool.cache(*id, hash_named(hash), parent.value_or(-1), tokens);
        entries[at(*id)] =
            Entry{hash, parent.value_or(-1), parent ? generation[at(*parent)] : 0, tokens};
        break;
      }
      default: {  // find: any answer must be a valid match, and none only if there is none
        const auto hash = static_cast<uint8_t>(rng() % 4);
        const auto parent =
            rng() % 3 == 0 ? std::nullopt : pick([&](int32_t b) { return entries[at(b)]; });
        const std::vector<int32_t> tokens = random_tokens();
        std::set<int32_t> valid;
        for (int32_t b = 0; b < n; ++b) {
          const auto& e = entries[at(b)];
          if (e && e->hash == hash && e->parent == parent.value_or(-1) && e->tokens == tokens &&
              (!parent || e->parent_generation == generation[at(*parent)])) {
            valid.insert(b);
          }
        }
        const auto got = pool.find_cached(hash_named(hash), parent.value_or(-1), tokens);
        ASSERT_EQ(got.has_value(), !valid.empty());
        if (got) {
          ASSERT_TRUE(valid.contains(*got)) << "served block " << *got;
        }
      }
    }
    ASSERT_EQ(pool.free_count(), static_cast<int32_t>(queue.size()));
    int32_t cached = 0;
    for (int32_t id = 0; id < n; ++id) {
      ASSERT_EQ(pool.ref_count(id), refs[at(id)]) << id;
      ASSERT_EQ(pool.is_cached(id), entries[at(id)].has_value()) << id;
      cached += entries[at(id)].has_value() ? 1 : 0;
    }
    ASSERT_EQ(pool.cached_count(), cached);
  }
  // The queue order, read by allocating everything that is free.
  const auto rest = pool.allocate(pool.free_count());
  EXPECT_EQ(*rest, std::vector<int32_t>(queue.begin(), queue.end()));
}

}  // namespace
}  // namespace ctxpar::kv
