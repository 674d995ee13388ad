// The read-bandwidth ceiling as a benchmark row of its own (1 and 2 threads), so a benchmark's
// output shows the ceiling its fractions divide by. Include it in one file of a benchmark
// binary: it registers "BM_ReadBandwidth/threads:N" there.
#pragma once

#include <benchmark/benchmark.h>

#include "read_bandwidth.h"

namespace ctxpar::bench {

inline void BM_ReadBandwidth(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  ReadCeiling c;
  for (auto _ : state) c = read_ceiling(threads);
  state.counters["GB/s"] = c.gb_per_s;
  state.counters["worst_GB/s"] = c.worst_gb_per_s;
  state.SetLabel(describe(c));
}
BENCHMARK(BM_ReadBandwidth)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace ctxpar::bench
