// DcpLayout: the worked examples of DESIGN.md §2, validation, the length matrix and random
// positions far beyond int32.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kv/dcp_layout.h"
#include "support/seeded_rng.h"

namespace ctxpar::kv {
namespace {

// The message of the Error that fn throws, or "" (and a failure) if it throws none.
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

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(DcpLayout, WorkedExampleSlotsOfPosition13) {
  const std::array<int32_t, 2> table = {7, 3};
  // I = 1: position 13 is odd, so rank 1 owns it; it is rank 1's local token 6, in virtual
  // block 1 (id 3): row 3·4 + 6 % 4 = 14.
  const DcpLayout i1(/*dcp_size=*/2, /*block_size=*/4, /*interleave=*/1);
  EXPECT_EQ(i1.owner(13), 1);
  EXPECT_EQ(i1.slot(13, 1, table), 14);
  EXPECT_EQ(i1.slot(13, 0, table), -1);
  // I = 2: runs of two alternate ranks; 13 is in run 6 (even), so rank 0 owns it: row 15.
  const DcpLayout i2(2, 4, 2);
  EXPECT_EQ(i2.owner(13), 0);
  EXPECT_EQ(i2.slot(13, 0, table), 15);
  EXPECT_EQ(i2.slot(13, 1, table), -1);
}

TEST(DcpLayout, WorkedExampleLocalLengths) {
  EXPECT_EQ(DcpLayout(4, 16, 1).local_lens(10), (std::vector<int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(DcpLayout(4, 16, 2).local_lens(10), (std::vector<int64_t>{4, 2, 2, 2}));
  EXPECT_EQ(DcpLayout(4, 16, 1).local_lens(1), (std::vector<int64_t>{1, 0, 0, 0}));
  EXPECT_EQ(DcpLayout(4, 16, 1).local_lens(0), (std::vector<int64_t>{0, 0, 0, 0}));
}

TEST(DcpLayout, WorkedExampleTokensOfEachRank) {
  const DcpLayout layout(2, 16, 1);
  std::array<std::vector<int64_t>, 2> held;
  for (int64_t p = 0; p < 9; ++p) held[static_cast<size_t>(layout.owner(p))].push_back(p);
  EXPECT_EQ(held[0], (std::vector<int64_t>{0, 2, 4, 6, 8}));
  EXPECT_EQ(held[1], (std::vector<int64_t>{1, 3, 5, 7}));
  EXPECT_EQ(layout.local_lens(9), (std::vector<int64_t>{5, 4}));
  for (int r = 0; r < 2; ++r) {
    for (size_t j = 0; j < held[static_cast<size_t>(r)].size(); ++j) {
      EXPECT_EQ(layout.local_index(held[static_cast<size_t>(r)][j]), static_cast<int64_t>(j));
      EXPECT_EQ(layout.global_position(static_cast<int64_t>(j), r),
                held[static_cast<size_t>(r)][j]);
    }
  }
}

TEST(DcpLayout, RejectsInvalidSizesNamingTheValues) {
  EXPECT_TRUE(contains(error_message([] { DcpLayout(0, 16, 1); }), "size 0"));
  EXPECT_TRUE(contains(error_message([] { DcpLayout(-3, 16, 1); }), "-3"));
  EXPECT_TRUE(contains(error_message([] { DcpLayout(2, 0, 1); }), "block size 0"));
  EXPECT_TRUE(contains(error_message([] { DcpLayout(2, 16, 0); }), "interleave size 0"));
  EXPECT_TRUE(contains(error_message([] { DcpLayout(2, 16, 32); }), "32"));
  const std::string not_dividing = error_message([] { DcpLayout(2, 6, 4); });
  EXPECT_TRUE(contains(not_dividing, "6") && contains(not_dividing, "4") &&
              contains(not_dividing, "multiple"))
      << not_dividing;
  EXPECT_NO_THROW(DcpLayout(3, 6, 6));
  EXPECT_NO_THROW(DcpLayout(7, 1, 1));
}

TEST(DcpLayout, RejectsBadPositionsRanksAndTables) {
  const DcpLayout layout(3, 4, 2);
  const std::array<int32_t, 2> table = {5, 9};
  EXPECT_THROW(layout.owner(-1), Error);
  EXPECT_THROW(layout.local_index(-7), Error);
  EXPECT_THROW(layout.local_len(-1, 0), Error);
  EXPECT_THROW(layout.local_len(5, 3), Error);
  EXPECT_THROW(layout.local_len(5, -1), Error);
  EXPECT_THROW(layout.global_position(-1, 0), Error);
  EXPECT_THROW(layout.global_position(0, 3), Error);
  EXPECT_THROW(layout.num_virtual_blocks(-2), Error);
  // The table covers 2·4·3 = 24 positions; position 24 needs a third entry.
  EXPECT_NO_THROW(layout.slot(23, layout.owner(23), table));
  const std::string short_table = error_message([&] { layout.slot(24, layout.owner(24), table); });
  EXPECT_TRUE(contains(short_table, "virtual block 2") && contains(short_table, "2 entries"))
      << short_table;
  EXPECT_THROW(layout.slot(24, (layout.owner(24) + 1) % 3, table), Error);  // on non-owners too
  EXPECT_THROW(layout.replicated_slot(24, table), Error);
  EXPECT_THROW(layout.slot(0, 3, table), Error);
  const std::array<int32_t, 1> unallocated = {-1};
  EXPECT_THROW(layout.slot(0, 0, unallocated), Error);
  EXPECT_THROW(layout.replicated_slot(0, unallocated), Error);
}

TEST(DcpLayout, VirtualBlockCounts) {
  const DcpLayout layout(3, 4, 2);
  EXPECT_EQ(layout.tokens_per_virtual_block(), 12);
  EXPECT_EQ(layout.num_virtual_blocks(0), 0);
  EXPECT_EQ(layout.num_virtual_blocks(1), 1);
  EXPECT_EQ(layout.num_virtual_blocks(12), 1);
  EXPECT_EQ(layout.num_virtual_blocks(13), 2);
  EXPECT_EQ(layout.num_virtual_blocks(36), 3);
}

TEST(DcpLayout, LengthMatrixOfARaggedBatch) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (int n : {1, 3, 5, 8}) {
    for (int num_reqs : {0, 1, 7}) {
      const DcpLayout layout(n, 16, std::array{1, 2, 8, 16}[rng() % 4]);
      std::vector<int64_t> seq_lens(static_cast<size_t>(num_reqs));
      for (auto& len : seq_lens) len = static_cast<int64_t>(rng() % 300);
      if (num_reqs > 0) seq_lens[0] = 0;  // an empty request: a row of zeros
      const Tensor matrix = layout.local_len_matrix(seq_lens);
      ASSERT_EQ(matrix.dtype(), DType::kI32);
      ASSERT_EQ(matrix.shape(), (Shape{num_reqs, n}));
      for (int i = 0; i < num_reqs; ++i) {
        int64_t total = 0;
        for (int r = 0; r < n; ++r) {
          const auto got = static_cast<int64_t>(matrix.item_as_double({i, r}));
          EXPECT_EQ(got, layout.local_len(seq_lens[static_cast<size_t>(i)], r));
          total += got;
        }
        EXPECT_EQ(total, seq_lens[static_cast<size_t>(i)]);
      }
    }
  }
  const std::vector<int64_t> negative = {4, -1};
  EXPECT_THROW(DcpLayout(2, 4, 1).local_len_matrix(negative), Error);
  const std::vector<int64_t> too_long = {int64_t{1} << 40};
  EXPECT_THROW(DcpLayout(2, 4, 1).local_len_matrix(too_long), Error);
}

// Positions far beyond int32: the formulas stay exact (no 32-bit intermediate).
TEST(DcpLayout, HugePositionsRoundTrip) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> position(0, int64_t{1} << 45);
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 8);
    const int b = std::array{1, 2, 4, 16, 64, 128}[rng() % 6];
    int i = 1 + static_cast<int>(rng() % static_cast<uint64_t>(b));
    while (b % i != 0) --i;
    const DcpLayout layout(n, b, i);
    const int64_t p = position(rng);
    const int r = layout.owner(p);
    const int64_t j = layout.local_index(p);
    ASSERT_EQ(layout.global_position(j, r), p) << n << " " << b << " " << i;
    ASSERT_EQ(layout.virtual_block(p), j / b);
    // p is in r's local sequence at index j, so the first j + 1 tokens include it and the
    // first j do not.
    ASSERT_EQ(layout.local_len(p + 1, r), j + 1);
    ASSERT_EQ(layout.local_len(p, r), j);
    int64_t total = 0;
    for (int64_t len : layout.local_lens(p)) total += len;
    ASSERT_EQ(total, p);
  }
}

}  // namespace
}  // namespace ctxpar::kv
