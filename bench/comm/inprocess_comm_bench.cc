// Latency and bandwidth of in-process all_gather, all_to_all and reduce_scatter for 2 and 4
// ranks at 4 KiB .. 16 MiB per rank, each next to a single-thread memcpy of the same bytes
// measured in the same run.
//
//   build-comm/bench/comm/comm_inprocess_bench --benchmark_min_time=0.2
//
// Counters: bytes_per_second = message bytes per rank per second; memcpy_us = the memcpy
// ceiling; x_memcpy = collective time / memcpy time (1.0 would be a memcpy's speed; with
// more ranks than cores, ranks share cores and the ratio grows accordingly).
//
// inprocess/after_work runs a 4 KiB all_gather after each rank computes for a random time
// around work_us, with one rank computing long_us instead every eighth time, as in a decode
// step (short waits of varying length between layers, now and then a long one). Counters:
// overhead_us = time per collective beyond the slowest rank's work; x_back_to_back = overhead_us /
// the latency of the same collective run back to back, measured in the same run (1.0: the waits
// cost nothing beyond the collective itself).
#include <algorithm>
#include <random>
#include <vector>

#include "comm_bench_common.h"
#include "ctxpar/comm/inprocess_communicator.h"

namespace ctxpar::bench {
namespace {

void BM_InProcess(benchmark::State& state, Op op) {
  const int ranks = static_cast<int>(state.range(0));
  const int64_t bytes = state.range(1);
  const double memcpy_s = memcpy_seconds(bytes);
  const int64_t iterations = static_cast<int64_t>(state.max_iterations);
  double loop_seconds = 0;
  run_inprocess_ranks(ranks, [&](Communicator& comm) {
    OpBuffers buffers(op, ranks, bytes);
    for (int i = 0; i < 3; ++i) buffers.run(op, comm);  // first touch, wake every rank
    comm.barrier();
    if (comm.rank() == 0) {
      // Rank 0 times the loop; the others run the same number of collectives.
      const auto start = std::chrono::steady_clock::now();
      for (auto _ : state) buffers.run(op, comm);
      loop_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } else {
      for (int64_t i = 0; i < iterations; ++i) buffers.run(op, comm);
    }
  });
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["memcpy_us"] = memcpy_s * 1e6;
  state.counters["x_memcpy"] =
      loop_seconds / static_cast<double>(std::max<int64_t>(1, state.iterations())) / memcpy_s;
}

// Keeps this thread busy (registers only, no memory traffic) for `us` microseconds.
void compute_for(double us) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(us);
  while (std::chrono::steady_clock::now() < end) {
  }
}

void BM_InProcessAfterWork(benchmark::State& state) {
  const int ranks = static_cast<int>(state.range(0));
  const double work_us = static_cast<double>(state.range(1));
  const double long_us = static_cast<double>(state.range(2));
  constexpr int64_t kBytes = 4 << 10;
  constexpr int kLongEvery = 8;
  const int64_t iterations = static_cast<int64_t>(state.max_iterations);
  // [iteration][rank] microseconds of work: uniform in [work/2, 3·work/2], and every
  // kLongEvery-th iteration long_us on the last rank.
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_real_distribution<double> draw(0.5 * work_us, 1.5 * work_us);
  std::vector<double> work(static_cast<size_t>(iterations * ranks));
  double slowest_sum_us = 0;
  for (int64_t i = 0; i < iterations; ++i) {
    double slowest = 0;
    for (int r = 0; r < ranks; ++r) {
      const bool long_turn = i % kLongEvery == kLongEvery - 1 && r == ranks - 1;
      work[i * ranks + r] = long_turn ? long_us : draw(rng);
      slowest = std::max(slowest, work[i * ranks + r]);
    }
    slowest_sum_us += slowest;
  }
  double loop_seconds = 0, back_to_back_seconds = 0;
  run_inprocess_ranks(ranks, [&](Communicator& comm) {
    OpBuffers buffers(Op::kAllGather, ranks, kBytes);
    // The ceiling: the same collective with no work between.
    constexpr int kBackToBack = 2000;
    for (int i = 0; i < 100; ++i) buffers.run(Op::kAllGather, comm);  // every rank awake
    comm.barrier();
    const auto b2b_start = std::chrono::steady_clock::now();
    for (int i = 0; i < kBackToBack; ++i) buffers.run(Op::kAllGather, comm);
    if (comm.rank() == 0) {
      back_to_back_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - b2b_start).count() /
          kBackToBack;
    }
    auto step = [&](int64_t i) {
      compute_for(work[i * ranks + comm.rank()]);
      buffers.run(Op::kAllGather, comm);
    };
    comm.barrier();
    if (comm.rank() == 0) {
      const auto start = std::chrono::steady_clock::now();
      int64_t i = 0;
      for (auto _ : state) step(i++);
      loop_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } else {
      for (int64_t i = 0; i < iterations; ++i) step(i);
    }
  });
  const double n = static_cast<double>(std::max<int64_t>(1, state.iterations()));
  const double overhead_s = (loop_seconds - slowest_sum_us * 1e-6) / n;
  state.counters["overhead_us"] = overhead_s * 1e6;
  state.counters["x_back_to_back"] = overhead_s / back_to_back_seconds;
}

void register_all() {
  benchmark::RegisterBenchmark("inprocess/after_work", BM_InProcessAfterWork)
      ->Args({2, 50, 500})
      ->Args({2, 200, 2000})
      ->ArgNames({"ranks", "work_us", "long_us"})
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);

  for (Op op : {Op::kAllGather, Op::kAllToAll, Op::kReduceScatter}) {
    auto* b = benchmark::RegisterBenchmark((std::string("inprocess/") + op_name(op)).c_str(),
                                           BM_InProcess, op);
    for (int ranks : {2, 4}) {
      for (int64_t bytes : message_bytes()) b->Args({ranks, bytes});
    }
    b->ArgNames({"ranks", "bytes"})->UseRealTime()->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace
}  // namespace ctxpar::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  ctxpar::bench::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
