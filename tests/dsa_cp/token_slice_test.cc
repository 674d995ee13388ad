// DSA-CP token slices: the shard arithmetic (contiguous, padded to a multiple of T, empty
// slices when T exceeds the tokens) and the slice's own metadata, which must describe exactly
// the step's tokens [first, last) — positions, requests, slots and causal key counts — for
// the normal and the DCP builder, on random ragged batches.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "ctxpar/attention/context_parallel/dcp_metadata_builder.h"
#include "ctxpar/attention/context_parallel/dsa_cp_metadata_builder.h"
#include "support/seeded_rng.h"

namespace ctxpar::attention {
namespace {

TEST(TokenShard, ContiguousPaddedSlicesCoverTheStep) {
  for (int64_t tokens : {0, 1, 2, 3, 5, 8, 17, 64}) {
    for (int size : {1, 2, 3, 4, 8}) {
      SCOPED_TRACE(fmt::format("{} tokens over {} ranks", tokens, size));
      int64_t next = 0;
      for (int r = 0; r < size; ++r) {
        const TokenShard s = make_token_shard(tokens, r, size);
        EXPECT_EQ(s.per_rank, std::max<int64_t>(1, (tokens + size - 1) / size));
        EXPECT_GE(s.padded_tokens(), tokens);
        if (tokens > 0) {
          EXPECT_LT(s.padded_tokens() - tokens, size) << "padding below T rows";
        }
        EXPECT_EQ(s.first, next);
        EXPECT_LE(s.num_local(), s.per_rank);
        EXPECT_GE(s.num_local(), 0);
        next = s.last;
      }
      EXPECT_EQ(next, tokens);
    }
  }
  EXPECT_THROW(make_token_shard(4, 2, 2), Error);
}

std::vector<ScheduledRequest> random_batch(std::mt19937& rng, const kv::DcpLayout& layout) {
  std::vector<ScheduledRequest> batch;
  const int reqs = 1 + static_cast<int>(rng() % 5);
  int32_t next_block = 0;
  for (int i = 0; i < reqs; ++i) {
    ScheduledRequest r;
    const bool decode = rng() % 3 == 0;
    r.num_computed =
        decode ? 1 + static_cast<int64_t>(rng() % 40) : static_cast<int64_t>(rng() % 30);
    r.num_scheduled = decode ? 1 : 1 + static_cast<int64_t>(rng() % 25);
    const int64_t blocks = layout.num_virtual_blocks(r.num_computed + r.num_scheduled);
    for (int64_t b = 0; b < blocks; ++b) r.block_table.push_back(next_block++);
    batch.push_back(std::move(r));
  }
  return batch;
}

template <class Builder, class... Args>
void check_slices(std::mt19937& rng, const kv::DcpLayout& layout, int dcp_rank, int tp,
                  const Args&... args) {
  for (int trial = 0; trial < 20; ++trial) {
    const std::vector<ScheduledRequest> batch = random_batch(rng, layout);
    const Builder plain(args...);
    const AttentionMetadata want = plain.build(batch);
    int64_t covered = 0;
    for (int r = 0; r < tp; ++r) {
      SCOPED_TRACE(fmt::format("trial {} rank {}/{}", trial, r, tp));
      const DsaCpBuilderMixin<Builder> builder(r, tp, args...);
      const AttentionMetadata md = builder.build(batch);
      ASSERT_TRUE(md.dsa_cp && md.dsa_cp->local);
      // The step's metadata is the wrapped builder's, untouched.
      EXPECT_EQ(md.common.num_tokens, want.common.num_tokens);
      EXPECT_EQ(md.common.num_decode_reqs, want.common.num_decode_reqs);
      EXPECT_EQ(md.dcp.has_value(), want.dcp.has_value());
      const TokenShard& s = md.dsa_cp->shard;
      const CommonAttentionMetadata& local = md.dsa_cp->local->common;
      EXPECT_FALSE(md.dsa_cp->local->dsa_cp) << "a slice carries no slice of its own";
      EXPECT_EQ(md.dsa_cp->local->dcp.has_value(), want.dcp.has_value());
      ASSERT_EQ(local.num_tokens, s.num_local());
      for (int64_t t = 0; t < s.num_local(); ++t) {
        const int64_t g = s.first + t;
        EXPECT_EQ(local.positions.data<int64_t>()[t], want.common.positions.data<int64_t>()[g]);
        EXPECT_EQ(local.slot_mapping.data<int64_t>()[t],
                  want.common.slot_mapping.data<int64_t>()[g]);
        EXPECT_EQ(local.causal_key_lens.data<int32_t>()[t],
                  want.common.causal_key_lens.data<int32_t>()[g]);
        // Same request, same block table row.
        const int32_t lr = local.token_req.data<int32_t>()[t];
        const int32_t gr = want.common.token_req.data<int32_t>()[g];
        const auto& table = batch[static_cast<size_t>(gr)].block_table;
        for (size_t b = 0; b < table.size(); ++b) {
          EXPECT_EQ(local.block_tables.data<int32_t>()[lr * local.block_tables.size(1) + b],
                    table[b]);
        }
      }
      covered += s.num_local();
    }
    EXPECT_EQ(covered, want.common.num_tokens);
  }
  (void)dcp_rank;
}

TEST(DsaCpMetadata, SliceMetadataDescribesExactlyTheSlice) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  for (int tp : {1, 2, 3, 4, 8}) {
    check_slices<AttentionMetadataBuilder>(rng, kv::DcpLayout(1, 16, 1), 0, tp, 16);
  }
  for (int n : {2, 4}) {
    for (int interleave : {1, 2, 4}) {
      const kv::DcpLayout layout(n, 4, interleave);
      for (int rank = 0; rank < n; ++rank) {
        check_slices<DcpMetadataBuilder>(rng, layout, rank, n, layout, rank);
      }
    }
  }
}

TEST(DsaCpMetadata, DecodeOnlyIsAPropertyOfTheStepNotTheSlice) {
  // Three decodes and one 2-token prefill chunk: a slice may hold only decodes, but the
  // step is mixed, and every rank must say so (it picks the collectives).
  std::vector<ScheduledRequest> batch;
  for (int i = 0; i < 3; ++i) batch.push_back({5, 1, {i}});
  batch.push_back({0, 2, {3}});
  for (int r = 0; r < 2; ++r) {
    const DsaCpBuilderMixin<AttentionMetadataBuilder> builder(r, 2, 16);
    const AttentionMetadata md = builder.build(batch);
    EXPECT_FALSE(md.decode_only());
    EXPECT_EQ(md.dsa_cp->shard.per_rank, 3);
  }
  batch.pop_back();
  const DsaCpBuilderMixin<AttentionMetadataBuilder> builder(1, 4, 16);
  EXPECT_TRUE(builder.build(batch).decode_only());
}

}  // namespace
}  // namespace ctxpar::attention
