// Prints the read-bandwidth ceiling (read_bandwidth.h), e.g. to check a machine before a
// benchmark run or to measure it beside another engine's run (bench/compare):
//   build/bench/support/read_ceiling [--passes P] [--json] [THREADS ...]
// Without THREADS: 1 thread and every core. --json prints one JSON object per line.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "pinning.h"
#include "read_bandwidth.h"

int main(int argc, char** argv) {
  int passes = 4;
  bool json = false;
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--passes" && i + 1 < argc) {
      passes = std::atoi(argv[++i]);
    } else if (a == "--json") {
      json = true;
    } else if (!a.empty() && a.find_first_not_of("0123456789") == std::string::npos) {
      threads.push_back(std::atoi(a.c_str()));
    } else {
      std::fprintf(stderr, "usage: %s [--passes P] [--json] [THREADS ...]\n", argv[0]);
      return 2;
    }
  }
  if (threads.empty()) threads = ctxpar::bench::detail::one_thread_and_every_core();
  for (int t : threads) {
    if (t < 1 || passes < 1) {
      std::fprintf(stderr, "threads and passes must be >= 1\n");
      return 2;
    }
    const auto c = ctxpar::bench::measure_read_ceiling(t, passes);
    if (json) {
      std::printf(
          "%s\n",
          fmt::format(R"({{"threads": {}, "gb_per_s": {:.3f}, "worst_gb_per_s": {:.3f}, )"
                      R"("one_stream_gb_per_s": {:.3f}, "streams": {}, )"
                      R"("prefetch_bytes": {}, "pinned": {}, "isa": "{}", )"
                      R"("buffer_bytes": {}}})",
                      c.threads, c.gb_per_s, c.worst_gb_per_s, c.one_stream_gb_per_s, c.streams,
                      c.prefetch_bytes, c.pinned ? "true" : "false", c.loop_isa, c.buffer_bytes)
              .c_str());
    } else {
      std::printf("%s\n", ctxpar::bench::describe(c).c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}
