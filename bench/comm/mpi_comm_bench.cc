// Latency and bandwidth of the MPI backend's all_gather, all_to_all and reduce_scatter at
// 4 KiB .. 16 MiB per rank, next to a memcpy of the same bytes measured in the same run.
// Run under mpirun; only rank 0 reports:
//
//   mpirun -np 2 --oversubscribe build-comm/bench/comm/comm_mpi_bench
//   mpirun -np 4 --oversubscribe build-comm/bench/comm/comm_mpi_bench
//
// (as root add --allow-run-as-root). Every rank must run the same number of collectives,
// so iteration counts are fixed per size instead of chosen adaptively per process.
// Counters as in comm_inprocess_bench.
#include <mpi.h>

#include <algorithm>

#include "comm_bench_common.h"
#include "ctxpar/comm/mpi_communicator.h"
#include "ctxpar/comm/mpi_session.h"

namespace ctxpar::bench {
namespace {

Communicator* g_world = nullptr;

void BM_Mpi(benchmark::State& state, Op op) {
  Communicator& comm = *g_world;
  const int64_t bytes = state.range(0);
  const double memcpy_s = memcpy_seconds(bytes);
  OpBuffers buffers(op, comm.size(), bytes);
  for (int i = 0; i < 3; ++i) buffers.run(op, comm);
  comm.barrier();
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) buffers.run(op, comm);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["ranks"] = comm.size();
  state.counters["memcpy_us"] = memcpy_s * 1e6;
  state.counters["x_memcpy"] =
      seconds / static_cast<double>(std::max<int64_t>(1, state.iterations())) / memcpy_s;
}

// Reports nothing: ranks other than 0 run the benchmarks only to take part in them.
class SilentReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

void register_all() {
  for (Op op : {Op::kAllGather, Op::kAllToAll, Op::kReduceScatter}) {
    for (int64_t bytes : message_bytes()) {
      // Fixed counts (about 64 MiB of traffic per size, at least 20 calls) keep every
      // rank's sequence of collectives identical.
      const int64_t iterations = std::clamp<int64_t>((int64_t{64} << 20) / bytes, 20, 4000);
      benchmark::RegisterBenchmark((std::string("mpi/") + op_name(op)).c_str(), BM_Mpi, op)
          ->Arg(bytes)
          ->ArgName("bytes")
          ->Iterations(iterations)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace
}  // namespace ctxpar::bench

int main(int argc, char** argv) {
  ctxpar::MpiSession session(&argc, &argv);
  return ctxpar::run_or_abort_mpi([&] {
    benchmark::Initialize(&argc, argv);
    auto world = ctxpar::MpiCommunicator::world();
    ctxpar::bench::g_world = world.get();
    ctxpar::bench::register_all();
    if (world->rank() == 0) {
      benchmark::RunSpecifiedBenchmarks();
    } else {
      ctxpar::bench::SilentReporter silent;
      benchmark::RunSpecifiedBenchmarks(&silent);
    }
    benchmark::Shutdown();
    return 0;
  });
}
