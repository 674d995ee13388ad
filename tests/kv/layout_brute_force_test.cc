// DcpLayout against a brute-force model of the layout, for every N in 1..8, every block size
// in {1, 2, 4, 16, 64, 128}, every interleave dividing it, and every length up to 3·B·N + 5.
//
// The model is built from the prose of DESIGN.md §2, not from the formulas: positions are
// dealt to the ranks in runs of I, round robin, and each rank appends what it gets to its
// local sequence.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "ctxpar/kv/dcp_layout.h"
#include "support/seeded_rng.h"

namespace ctxpar::kv {
namespace {

struct Dealt {
  std::vector<int> owner;            // [num_positions]
  std::vector<int64_t> local_index;  // [num_positions]
};

Dealt deal_round_robin(int n, int interleave, int64_t num_positions) {
  Dealt d;
  std::vector<int64_t> dealt_to(static_cast<size_t>(n), 0);
  int rank = 0;
  for (int64_t p = 0; p < num_positions;) {
    for (int k = 0; k < interleave && p < num_positions; ++k, ++p) {
      d.owner.push_back(rank);
      d.local_index.push_back(dealt_to[static_cast<size_t>(rank)]++);
    }
    rank = (rank + 1) % n;
  }
  return d;
}

// Distinct random block ids out of a pool somewhat larger than needed, in random order.
std::vector<int32_t> random_block_table(int64_t num_vblocks, std::mt19937_64& rng,
                                        int32_t* pool_size) {
  *pool_size = static_cast<int32_t>(num_vblocks + static_cast<int64_t>(rng() % 6));
  std::vector<int32_t> ids(static_cast<size_t>(*pool_size));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  ids.resize(static_cast<size_t>(num_vblocks));
  return ids;
}

void check_layout(const DcpLayout& layout, std::mt19937_64& rng) {
  const int n = layout.dcp_size();
  const int b = layout.block_size();
  const int64_t bn = layout.tokens_per_virtual_block();
  const int64_t max_len = 3 * bn + 5;
  const int64_t num_vblocks = layout.num_virtual_blocks(max_len);
  const int64_t capacity = num_vblocks * bn;  // every position the table can address
  const Dealt dealt = deal_round_robin(n, layout.interleave(), capacity);

  // Owner, local index, inverse, and the lengths of every prefix [0, L).
  std::vector<int64_t> held(static_cast<size_t>(n), 0);
  for (int64_t len = 0; len <= max_len; ++len) {
    int64_t total = 0;
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(layout.local_len(len, r), held[static_cast<size_t>(r)]) << "L " << len;
      total += layout.local_len(len, r);
    }
    ASSERT_EQ(total, len);
    ASSERT_EQ(layout.num_virtual_blocks(len), (len + bn - 1) / bn);
    if (len == max_len) break;
    const int64_t p = len;
    const int r = dealt.owner[static_cast<size_t>(p)];
    ASSERT_EQ(layout.owner(p), r) << "p " << p;
    // The first local_len(L, r) local indices of r are exactly its positions < L: p gets the
    // next index after all of r's earlier positions.
    ASSERT_EQ(layout.local_index(p), dealt.local_index[static_cast<size_t>(p)]) << "p " << p;
    ASSERT_EQ(layout.global_position(layout.local_index(p), r), p);
    ASSERT_EQ(layout.virtual_block(p), p / bn);
    ASSERT_EQ(layout.virtual_block(p), layout.local_index(p) / b);
    ++held[static_cast<size_t>(r)];
  }

  // Slots over every position a random table addresses. On each rank they must be distinct
  // and fill exactly the B rows of each allocated block; each position has exactly one rank
  // with a slot, its owner.
  int32_t pool_size = 0;
  const std::vector<int32_t> table = random_block_table(num_vblocks, rng, &pool_size);
  std::vector<std::vector<char>> row_used(static_cast<size_t>(n),
                                          std::vector<char>(static_cast<size_t>(pool_size) * b, 0));
  std::vector<char> replicated_used(static_cast<size_t>(pool_size * bn), 0);
  for (int64_t p = 0; p < capacity; ++p) {
    int owners = 0;
    for (int r = 0; r < n; ++r) {
      const int64_t s = layout.slot(p, r, table);
      if (s == -1) continue;
      ++owners;
      ASSERT_EQ(r, dealt.owner[static_cast<size_t>(p)]) << "p " << p;
      ASSERT_GE(s, 0);
      ASSERT_EQ(s / b, table[static_cast<size_t>(p / bn)]) << "p " << p << " outside its block";
      char& used = row_used[static_cast<size_t>(r)][static_cast<size_t>(s)];
      ASSERT_EQ(used, 0) << "rank " << r << " slot " << s << " written twice (p " << p << ")";
      used = 1;
    }
    ASSERT_EQ(owners, 1) << "p " << p;
    const int64_t s = layout.replicated_slot(p, table);
    ASSERT_GE(s, 0);
    ASSERT_EQ(s / bn, table[static_cast<size_t>(p / bn)]) << "p " << p;
    ASSERT_EQ(replicated_used[static_cast<size_t>(s)], 0) << "replicated slot " << s;
    replicated_used[static_cast<size_t>(s)] = 1;
  }
  // Allocated rows are all used and nothing else: a bijection onto the allocated slots.
  std::vector<char> allocated(static_cast<size_t>(pool_size), 0);
  for (int32_t id : table) allocated[static_cast<size_t>(id)] = 1;
  for (int r = 0; r < n; ++r) {
    for (int64_t s = 0; s < int64_t{pool_size} * b; ++s) {
      ASSERT_EQ(row_used[static_cast<size_t>(r)][static_cast<size_t>(s)],
                allocated[static_cast<size_t>(s / b)])
          << "rank " << r << " row " << s;
    }
  }
  for (int64_t s = 0; s < int64_t{pool_size} * bn; ++s) {
    ASSERT_EQ(replicated_used[static_cast<size_t>(s)], allocated[static_cast<size_t>(s / bn)])
        << "replicated row " << s;
  }
}

TEST(DcpLayoutBruteForce, EveryGroupBlockAndInterleaveSize) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  int configs = 0;
  for (int n = 1; n <= 8; ++n) {
    for (int b : {1, 2, 4, 16, 64, 128}) {
      for (int i = 1; i <= b; ++i) {
        if (b % i != 0) continue;
        SCOPED_TRACE(testing::Message() << "N " << n << " B " << b << " I " << i);
        check_layout(DcpLayout(n, b, i), rng);
        if (HasFatalFailure()) return;
        ++configs;
      }
    }
  }
  EXPECT_EQ(configs, 8 * (1 + 2 + 3 + 5 + 7 + 8));
}

}  // namespace
}  // namespace ctxpar::kv
