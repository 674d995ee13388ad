// The huge-block cache: freed blocks come back for the same size only, the cache stays within
// its bound (least recently freed go first), and large tensors use it without being counted
// as live once freed.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "ctxpar/core/huge_block_cache.h"
#include "ctxpar/core/tensor.h"

namespace ctxpar {
namespace {

// Each test starts from an empty cache.
class HugeBlockCache : public testing::Test {
 protected:
  void SetUp() override {
    empty_huge_block_cache();
    ASSERT_EQ(huge_block_cache_bytes(), 0u);
  }
  void TearDown() override { empty_huge_block_cache(); }
};

TEST_F(HugeBlockCache, AFreedBlockComesBackForTheSameSizeOnly) {
  std::mt19937 rng(std::random_device{}());
  const size_t pages = std::uniform_int_distribution<size_t>(1, 7)(rng);
  const size_t bytes = pages * kHugePageBytes;
  void* a = allocate_huge_block(bytes);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % kHugePageBytes, 0u);
  release_huge_block(a, bytes);
  EXPECT_EQ(huge_block_cache_bytes(), bytes);
  void* other = allocate_huge_block(bytes + kHugePageBytes);  // another size: a new block
  EXPECT_NE(other, a);
  EXPECT_EQ(allocate_huge_block(bytes), a);
  EXPECT_EQ(huge_block_cache_bytes(), 0u);
  release_huge_block(other, bytes + kHugePageBytes);
  release_huge_block(a, bytes);
}

TEST_F(HugeBlockCache, StaysWithinItsBoundDroppingTheOldestFirst) {
  // Untouched blocks: the address space is reserved, no memory is committed.
  const size_t quarter = kHugeBlockCacheBytes / 4;
  std::vector<void*> blocks;
  for (int i = 0; i < 6; ++i) blocks.push_back(allocate_huge_block(quarter));
  for (void* b : blocks) {
    ASSERT_NE(b, nullptr);
    release_huge_block(b, quarter);
    EXPECT_LE(huge_block_cache_bytes(), kHugeBlockCacheBytes);
  }
  EXPECT_EQ(huge_block_cache_bytes(), kHugeBlockCacheBytes);
  // The four most recently freed are what is left, newest handed out first.
  for (int i = 5; i >= 2; --i) EXPECT_EQ(allocate_huge_block(quarter), blocks[i]) << i;
  EXPECT_EQ(huge_block_cache_bytes(), 0u);
  for (int i = 2; i < 6; ++i) release_huge_block(blocks[i], quarter);
  // Larger than the whole cache: freed at once.
  void* huge = allocate_huge_block(kHugeBlockCacheBytes + kHugePageBytes);
  ASSERT_NE(huge, nullptr);
  release_huge_block(huge, kHugeBlockCacheBytes + kHugePageBytes);
  EXPECT_EQ(huge_block_cache_bytes(), kHugeBlockCacheBytes);
}

TEST_F(HugeBlockCache, LargeTensorsReuseStorageAndAreNotCountedOnceFreed) {
  const auto before = allocation_stats();
  const void* first = nullptr;
  {
    const Tensor t = Tensor::empty({3, kHugePageBytes / 4 + 5}, DType::kF32);  // 3 pages + 60 B
    first = t.raw();
    EXPECT_EQ(allocation_stats().live_bytes - before.live_bytes, static_cast<int64_t>(t.nbytes()));
  }
  EXPECT_EQ(allocation_stats().live_bytes, before.live_bytes);
  const Tensor same_size = Tensor::empty({kHugePageBytes / 4 + 1, 6}, DType::kBF16);
  EXPECT_EQ(same_size.raw(), first);  // both round up to 4 huge pages
}

TEST_F(HugeBlockCache, ThreadsAllocatingAndFreeingNeverShareABlock) {
  constexpr int kThreads = 4, kRounds = 200;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      std::mt19937 rng(static_cast<uint32_t>(t) + std::random_device{}());
      for (int r = 0; r < kRounds; ++r) {
        const size_t bytes = std::uniform_int_distribution<size_t>(1, 3)(rng) * kHugePageBytes;
        auto* p = static_cast<volatile uint8_t*>(allocate_huge_block(bytes));
        const auto mark = static_cast<uint8_t>(t * 31 + r);
        p[0] = mark;
        p[bytes - 1] = mark;
        std::this_thread::yield();
        if (p[0] != mark || p[bytes - 1] != mark) ++failures[static_cast<size_t>(t)];
        release_huge_block(const_cast<uint8_t*>(p), bytes);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[static_cast<size_t>(t)], 0) << t;
}

}  // namespace
}  // namespace ctxpar
