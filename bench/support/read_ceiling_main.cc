// Prints the read-bandwidth ceiling (read_bandwidth.h) for 1 thread and for every core, e.g.
// to check a machine before a benchmark run: build/bench/support/read_ceiling [passes]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "read_bandwidth.h"

int main(int argc, char** argv) {
  const int passes = argc > 1 ? std::atoi(argv[1]) : 8;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int t : {1, cores}) {
    if (t == cores && cores == 1) break;
    const auto c = ctxpar::bench::measure_read_ceiling(t, passes);
    std::printf("%s\n", ctxpar::bench::describe(c).c_str());
  }
  return 0;
}
