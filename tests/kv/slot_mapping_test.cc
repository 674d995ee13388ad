// Slot mappings of ragged batches: a mix of decodes and prefill chunks over several requests.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <span>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kv/block_table.h"
#include "ctxpar/kv/slot_mapping.h"
#include "support/seeded_rng.h"

namespace ctxpar::kv {
namespace {

struct Batch {
  std::vector<int64_t> positions;
  std::vector<int32_t> request_of_token;
  std::vector<BlockTable> tables;
  std::vector<std::span<const int32_t>> table_views;
};

// num_reqs requests, each with a random number of computed tokens and 1..max_new new ones,
// their block tables grown to cover all of them.
Batch random_batch(const DcpLayout& layout, BlockPool& pool, int num_reqs, std::mt19937_64& rng) {
  Batch batch;
  for (int req = 0; req < num_reqs; ++req) {
    const auto computed = static_cast<int64_t>(rng() % 200);
    const auto scheduled = static_cast<int64_t>(rng() % 3 == 0 ? 1 + rng() % 70 : 1);
    batch.tables.emplace_back(pool, layout);
    EXPECT_TRUE(batch.tables.back().grow(computed + scheduled));
    for (int64_t p = computed; p < computed + scheduled; ++p) {
      batch.positions.push_back(p);
      batch.request_of_token.push_back(req);
    }
  }
  for (const BlockTable& t : batch.tables) batch.table_views.push_back(t.ids());
  return batch;
}

TEST(SlotMapping, EachNewTokenIsWrittenOnceAcrossTheGroup) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (int n : {1, 2, 3, 5, 8}) {
    for (int interleave : {1, 2, 16}) {
      SCOPED_TRACE(testing::Message() << "N " << n << " I " << interleave);
      const DcpLayout layout(n, 16, interleave);
      BlockPool pool(400);
      const int num_reqs = static_cast<int>(rng() % 6);  // 0 is an empty batch
      const Batch batch = random_batch(layout, pool, num_reqs, rng);
      const size_t num_tokens = batch.positions.size();
      std::vector<int> writers(num_tokens, 0);
      for (int r = 0; r < n; ++r) {
        std::vector<int64_t> out(num_tokens, std::numeric_limits<int64_t>::min());  // poison
        fill_slot_mapping(layout, r, batch.positions, batch.request_of_token, batch.table_views,
                          out);
        const Tensor as_tensor =
            slot_mapping(layout, r, batch.positions, batch.request_of_token, batch.table_views);
        ASSERT_EQ(as_tensor.dtype(), DType::kI64);
        ASSERT_EQ(as_tensor.shape(), (Shape{static_cast<int64_t>(num_tokens)}));
        std::set<int64_t> rows;
        for (size_t t = 0; t < num_tokens; ++t) {
          ASSERT_EQ(as_tensor.data<int64_t>()[t], out[t]);
          const int64_t p = batch.positions[t];
          const auto table = batch.table_views[static_cast<size_t>(batch.request_of_token[t])];
          if (layout.owner(p) != r) {
            ASSERT_EQ(out[t], -1) << "token " << t;
            continue;
          }
          ++writers[t];
          // Inside the block of its virtual block, at the row of its local index.
          ASSERT_EQ(out[t] / 16, table[static_cast<size_t>(p / (16 * n))]);
          ASSERT_EQ(out[t] % 16, layout.local_index(p) % 16);
          ASSERT_TRUE(rows.insert(out[t]).second) << "row " << out[t] << " written twice";
        }
      }
      for (size_t t = 0; t < num_tokens; ++t) ASSERT_EQ(writers[t], 1) << "token " << t;

      // The replicated view: never -1, distinct rows, inside the token's block.
      std::vector<int64_t> out(num_tokens, std::numeric_limits<int64_t>::min());
      fill_replicated_slot_mapping(layout, batch.positions, batch.request_of_token,
                                   batch.table_views, out);
      const Tensor as_tensor = replicated_slot_mapping(layout, batch.positions,
                                                       batch.request_of_token, batch.table_views);
      std::set<int64_t> rows;
      for (size_t t = 0; t < num_tokens; ++t) {
        ASSERT_EQ(as_tensor.data<int64_t>()[t], out[t]);
        const int64_t p = batch.positions[t];
        const auto table = batch.table_views[static_cast<size_t>(batch.request_of_token[t])];
        ASSERT_EQ(out[t] / (16 * n), table[static_cast<size_t>(p / (16 * n))]);
        ASSERT_EQ(out[t] % (16 * n), p % (16 * n));
        ASSERT_TRUE(rows.insert(out[t]).second);
      }
    }
  }
}

TEST(SlotMapping, RejectsMalformedBatches) {
  const DcpLayout layout(2, 4, 1);
  const std::array<int32_t, 1> table = {3};  // covers positions [0, 8)
  const std::array<std::span<const int32_t>, 1> tables = {table};
  const std::array<int64_t, 2> positions = {6, 8};
  const std::array<int32_t, 2> requests = {0, 0};
  std::array<int64_t, 2> out{};
  // Position 8 is past the table.
  EXPECT_THROW(fill_slot_mapping(layout, 0, positions, requests, tables, out), Error);
  EXPECT_THROW(fill_replicated_slot_mapping(layout, positions, requests, tables, out), Error);
  const std::array<int64_t, 2> ok_positions = {6, 7};
  EXPECT_NO_THROW(fill_slot_mapping(layout, 1, ok_positions, requests, tables, out));
  EXPECT_EQ(out[0], -1);
  EXPECT_EQ(out[1], 3 * 4 + 3);
  const std::array<int32_t, 2> bad_request = {0, 1};
  EXPECT_THROW(fill_slot_mapping(layout, 0, ok_positions, bad_request, tables, out), Error);
  const std::array<int32_t, 1> too_few = {0};
  EXPECT_THROW(fill_slot_mapping(layout, 0, ok_positions, too_few, tables, out), Error);
  std::array<int64_t, 3> wrong_out{};
  EXPECT_THROW(fill_slot_mapping(layout, 0, ok_positions, requests, tables, wrong_out), Error);
  EXPECT_THROW(fill_slot_mapping(layout, 2, ok_positions, requests, tables, out), Error);
  const std::array<int64_t, 2> negative = {-1, 0};
  EXPECT_THROW(fill_slot_mapping(layout, 0, negative, requests, tables, out), Error);
}

}  // namespace
}  // namespace ctxpar::kv
