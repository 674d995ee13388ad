#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "ctxpar/core/thread_pool.h"

namespace ctxpar {
namespace {

TEST(ThreadPool, EveryTaskRunsExactlyOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 200; ++round) {
      const int64_t n = round % 37;
      std::vector<std::atomic<int>> hits(n);
      pool.run(n, [&](int64_t t, int thread) {
        ASSERT_LT(thread, threads);
        hits[t].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << threads << " " << n;
    }
  }
}

// Idle workers spin ~200 µs and then sleep, and run() sleeps when a task outlasts its spin:
// gaps between loops and task lengths drawn on both sides of that exercise every hand-off
// (a lost wake-up hangs the test, which ctest's timeout ends).
TEST(ThreadPool, LoopsAfterIdleGapsAndWithLongTasksAllComplete) {
  std::mt19937 rng(std::random_device{}());
  for (int threads : {2, 3}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 40; ++round) {
      const auto gap = std::chrono::microseconds(rng() % 600);
      const auto task = std::chrono::microseconds(rng() % 600);
      std::this_thread::sleep_for(gap);
      const int64_t n = 1 + static_cast<int64_t>(rng() % 6);
      std::vector<std::atomic<int>> hits(n);
      pool.run(n, [&](int64_t t, int) {
        if (t == n - 1) std::this_thread::sleep_for(task);
        hits[t].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << threads << " " << n;
    }
  }
}

// Every index once; every range at least the grain but the one that ends the loop; and with
// room for it, the loop's last quarter in small ranges, so that no thread waits long at its end.
TEST(ThreadPool, ParallelForCoversTheRangeWithoutOverlapAndEndsInSmallRanges) {
  std::mt19937 rng(std::random_device{}());
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int round = 0; round < 60; ++round) {
      const int64_t n = round < 4 ? round : static_cast<int64_t>(rng() % 5000);
      const int64_t grain = 1 + static_cast<int64_t>(rng() % 70);
      std::vector<std::atomic<int>> hits(n);
      std::mutex mu;
      std::vector<std::pair<int64_t, int64_t>> ranges;
      pool.parallel_for(n, grain, [&](int64_t b, int64_t e, int thread) {
        ASSERT_LT(thread, threads);
        ASSERT_LT(b, e);
        for (int64_t i = b; i < e; ++i) hits[i].fetch_add(1);
        const std::lock_guard<std::mutex> lock(mu);
        ranges.emplace_back(b, e);
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << n << " " << grain;
      for (const auto& [b, e] : ranges) {
        if (e != n) {
          EXPECT_GE(e - b, grain) << "[" << b << ", " << e << ") of " << n;
        }
        if (threads > 1 && n >= 16 * threads * grain && b >= n - n / 4) {
          EXPECT_LE(e - b, n / (4 * threads) + grain) << "[" << b << ", " << e << ") of " << n;
        }
      }
    }
  }
}

TEST(ThreadPool, FirstExceptionReachesTheCallerAndPoolStaysUsable) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.run(50,
                        [](int64_t t, int) {
                          if (t == 17) throw std::runtime_error("task 17");
                        }),
               std::runtime_error);
  std::atomic<int64_t> sum{0};
  pool.run(10, [&](int64_t t, int) { sum += t; });
  EXPECT_EQ(sum.load(), 45);
}

}  // namespace
}  // namespace ctxpar
