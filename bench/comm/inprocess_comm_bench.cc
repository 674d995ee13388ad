// Latency and bandwidth of in-process all_gather, all_to_all and reduce_scatter for 2 and 4
// ranks at 4 KiB .. 16 MiB per rank, each next to a single-thread memcpy of the same bytes
// measured in the same run.
//
//   build-comm/bench/comm/comm_inprocess_bench --benchmark_min_time=0.2
//
// Counters: bytes_per_second = message bytes per rank per second; memcpy_us = the memcpy
// ceiling; x_memcpy = collective time / memcpy time (1.0 would be a memcpy's speed; with
// more ranks than cores, ranks share cores and the ratio grows accordingly).
#include <algorithm>

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

void register_all() {
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
