// Cache specs and capacity, checked against numbers worked out here from the inputs.
#include <gtest/gtest.h>

#include <array>
#include <climits>
#include <cstdint>
#include <random>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kv/kv_cache_spec.h"
#include "support/seeded_rng.h"

namespace ctxpar::kv {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

TEST(KvCacheSpec, GqaStoresTheRanksKvHeadsReplicatingWhenFewerThanRanks) {
  // 8 KV heads over 2 ranks: 4 heads each, K and V of 128 bf16 values.
  const KvCacheSpec split = gqa_kv_cache_spec(8, 128, 2, DType::kBF16);
  EXPECT_EQ(split.heads_per_rank, 4);
  EXPECT_EQ(split.bytes_per_token(), 4 * 128 * 2 * 2);
  EXPECT_TRUE(split.sharded_by_dcp);
  // 2 KV heads over 8 ranks: each head lives on 4 ranks, one head per rank.
  const KvCacheSpec replicated = gqa_kv_cache_spec(2, 64, 8, DType::kF32);
  EXPECT_EQ(replicated.heads_per_rank, 1);
  EXPECT_EQ(replicated.bytes_per_token(), 1 * 64 * 2 * 4);
  EXPECT_EQ(gqa_kv_cache_spec(5, 16, 5, DType::kF16).heads_per_rank, 1);
  EXPECT_EQ(gqa_kv_cache_spec(6, 16, 1, DType::kF16).heads_per_rank, 6);

  EXPECT_THROW(gqa_kv_cache_spec(6, 128, 4, DType::kBF16), Error);  // neither divides
  EXPECT_THROW(gqa_kv_cache_spec(3, 128, 2, DType::kBF16), Error);
  EXPECT_THROW(gqa_kv_cache_spec(0, 128, 1, DType::kBF16), Error);
  EXPECT_THROW(gqa_kv_cache_spec(8, 0, 1, DType::kBF16), Error);
  EXPECT_THROW(gqa_kv_cache_spec(8, 128, 0, DType::kBF16), Error);
}

TEST(KvCacheSpec, MlaAndIndexer) {
  // DeepSeek-V3: 512-dim latent + 64-dim roped key per token, one copy per rank.
  const KvCacheSpec mla = mla_kv_cache_spec(512, 64, DType::kBF16);
  EXPECT_EQ(mla.bytes_per_token(), (512 + 64) * 2);
  EXPECT_TRUE(mla.sharded_by_dcp);
  const KvCacheSpec indexer = indexer_kv_cache_spec(128, DType::kBF16);
  EXPECT_EQ(indexer.bytes_per_token(), 128 * 2);
  EXPECT_FALSE(indexer.sharded_by_dcp);
  EXPECT_THROW(mla_kv_cache_spec(0, 64, DType::kBF16), Error);
  EXPECT_THROW(mla_kv_cache_spec(512, -1, DType::kBF16), Error);
  EXPECT_THROW(indexer_kv_cache_spec(0, DType::kBF16), Error);
  EXPECT_FALSE(mla.describe().empty());
}

// A block id covers B·N positions: a sharded cache keeps B of them per rank, a replicated one
// all B·N.
TEST(KvCacheSpec, BytesOfOneBlockIdOnARank) {
  const DcpLayout layout(4, 16, 2);
  const KvCacheSpec mla = mla_kv_cache_spec(512, 64, DType::kBF16);
  const KvCacheSpec indexer = indexer_kv_cache_spec(128, DType::kBF16);
  EXPECT_EQ(mla.rows_per_block(layout), 16);
  EXPECT_EQ(mla.bytes_per_block(layout), 16 * 1152);
  EXPECT_EQ(indexer.rows_per_block(layout), 64);
  EXPECT_EQ(indexer.bytes_per_block(layout), 64 * 256);
}

TEST(KvCapacity, QwenStyleGqaModel) {
  // 28 layers, 4 KV heads of 128, bf16, TP 8 (heads replicated twice), DCP 2, B 16, 10 GiB.
  const DcpLayout layout(2, 16, 1);
  const std::vector<KvCacheSpec> layers(28, gqa_kv_cache_spec(4, 128, 8, DType::kBF16));
  const KvCapacity c = plan_kv_capacity(10 * kGiB, layout, layers);
  const int64_t per_token = 28 * 1 * 128 * 2 * 2;  // layers · heads · dim · (K, V) · bytes
  const int64_t per_block = 16 * per_token;
  EXPECT_EQ(c.bytes_per_block, per_block);
  EXPECT_EQ(c.num_blocks, 10 * kGiB / per_block);
  EXPECT_EQ(c.kv_bytes_per_rank, c.num_blocks * per_block);
  EXPECT_EQ(c.token_capacity, c.num_blocks * int64_t{16 * 2});
  // DCP's promise: the same memory holds N times the tokens.
  EXPECT_EQ(c.token_capacity, 2 * c.token_capacity_without_dcp);
}

TEST(KvCapacity, SparseAttentionModelPaysForItsReplicatedIndexer) {
  // 61 layers of MLA (512 + 64) plus an indexer key (128) each, bf16; N 8, B 64, 40 GiB.
  const DcpLayout layout(8, 64, 1);
  std::vector<KvCacheSpec> specs;
  for (int layer = 0; layer < 61; ++layer) {
    specs.push_back(mla_kv_cache_spec(512, 64, DType::kBF16));
    specs.push_back(indexer_kv_cache_spec(128, DType::kBF16));
  }
  const KvCapacity c = plan_kv_capacity(40 * kGiB, layout, specs);
  const int64_t per_block = 61 * (64 * 1152 + 64 * 8 * 256);
  EXPECT_EQ(c.bytes_per_block, per_block);
  EXPECT_EQ(c.num_blocks, 40 * kGiB / per_block);
  EXPECT_EQ(c.token_capacity, c.num_blocks * int64_t{64 * 8});
  const int64_t per_block_without_dcp = 61 * 64 * (1152 + 256);
  EXPECT_EQ(c.token_capacity_without_dcp, 40 * kGiB / per_block_without_dcp * 64);
  EXPECT_LT(c.token_capacity, 8 * c.token_capacity_without_dcp);
  EXPECT_GT(c.token_capacity, c.token_capacity_without_dcp);
}

TEST(KvCapacity, RandomModelsMatchTheFormula) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const std::array dtypes = {DType::kF32, DType::kBF16, DType::kF16, DType::kU8};
  const std::array dtype_bytes = {4, 2, 2, 1};
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 8);
    const int b = std::array{1, 2, 4, 16, 64, 128}[rng() % 6];
    const DcpLayout layout(n, b, 1);
    const int tp = n * (1 + static_cast<int>(rng() % 3));
    std::vector<KvCacheSpec> specs;
    int64_t expected_block = 0;
    int64_t expected_block_without_dcp = 0;
    const int num_layers = 1 + static_cast<int>(rng() % 7);
    for (int layer = 0; layer < num_layers; ++layer) {
      const size_t d = rng() % dtypes.size();
      const int dim = 1 + static_cast<int>(rng() % 300);
      int64_t token_bytes = 0;
      bool sharded = true;
      switch (rng() % 3) {
        case 0: {
          int kv_heads = std::array{1, 2, tp, 2 * tp}[rng() % 4];
          if (tp % kv_heads != 0 && kv_heads % tp != 0) kv_heads = tp;
          specs.push_back(gqa_kv_cache_spec(kv_heads, dim, tp, dtypes[d]));
          const int per_rank = kv_heads >= tp ? kv_heads / tp : 1;
          token_bytes = int64_t{2} * per_rank * dim * dtype_bytes[d];
          break;
        }
        case 1: {
          const int rope = static_cast<int>(rng() % 65);
          specs.push_back(mla_kv_cache_spec(dim, rope, dtypes[d]));
          token_bytes = int64_t{dim + rope} * dtype_bytes[d];
          break;
        }
        default:
          specs.push_back(indexer_kv_cache_spec(dim, dtypes[d]));
          token_bytes = int64_t{dim} * dtype_bytes[d];
          sharded = false;
      }
      expected_block += (sharded ? b : b * n) * token_bytes;
      expected_block_without_dcp += b * token_bytes;
    }
    const auto budget = static_cast<int64_t>(rng() % (64 * kGiB));
    if (budget / expected_block > INT32_MAX) {
      // Tiny blocks in a huge budget: more blocks than int32 ids can name is an error.
      EXPECT_THROW(plan_kv_capacity(budget, layout, specs), Error);
      continue;
    }
    const KvCapacity c = plan_kv_capacity(budget, layout, specs);
    ASSERT_EQ(c.bytes_per_block, expected_block);
    ASSERT_EQ(c.num_blocks, budget / expected_block);
    ASSERT_EQ(c.kv_bytes_per_rank, budget / expected_block * expected_block);
    ASSERT_LE(c.kv_bytes_per_rank, budget);
    ASSERT_EQ(c.token_capacity, budget / expected_block * b * n);
    ASSERT_EQ(c.token_capacity_without_dcp, budget / expected_block_without_dcp * b);
  }
}

TEST(KvCapacity, RejectsImpossibleInputs) {
  const DcpLayout layout(2, 16, 1);
  const std::vector<KvCacheSpec> one = {mla_kv_cache_spec(512, 64, DType::kBF16)};
  EXPECT_THROW(plan_kv_capacity(-1, layout, one), Error);
  EXPECT_THROW(plan_kv_capacity(kGiB, layout, {}), Error);
  EXPECT_EQ(plan_kv_capacity(100, layout, one).num_blocks, 0);  // less than one block
  const std::vector<KvCacheSpec> tiny = {indexer_kv_cache_spec(1, DType::kU8)};
  EXPECT_THROW(plan_kv_capacity(int64_t{1} << 40, DcpLayout(1, 1, 1), tiny), Error);
}

}  // namespace
}  // namespace ctxpar::kv
