// Prints the compute ceilings (fma_ceiling.h): the f32 FMA's and vdpbf16ps's multiply-adds per
// second, e.g. beside another engine's prefill (bench/compare):
//   build/bench/support/compute_ceiling [--avx2] [--json] [THREADS ...]
// Without THREADS: 1 thread and every core. --avx2: the FMA loop no wider than AVX2 and no bf16
// dot (what engines held to AVX2 can reach). --json prints one JSON object per line, the bf16
// dot's GFLOP/s 0 where it is not measured.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "ctxpar/core/cpu_features.h"
#include "fma_ceiling.h"
#include "pinning.h"

int main(int argc, char** argv) {
  bool json = false;
  bool avx2 = false;
  std::vector<int> threads;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json") {
      json = true;
    } else if (a == "--avx2") {
      avx2 = true;
    } else if (!a.empty() && a.size() < 6 &&
               a.find_first_not_of("0123456789") == std::string::npos &&
               std::atoi(a.c_str()) >= 1) {
      threads.push_back(std::atoi(a.c_str()));
    } else {
      std::fprintf(
          stderr,
          "%s: '%s' is not valid; usage: %s [--avx2] [--json] [THREADS ...], THREADS >= 1\n",
          argv[0], a.c_str(), argv[0]);
      return 2;
    }
  }
  if (threads.empty()) threads = ctxpar::bench::detail::one_thread_and_every_core();
  for (int t : threads) {
    const auto fma =
        ctxpar::bench::measure_fma_ceiling(t, avx2 ? ctxpar::Isa::kAvx2 : ctxpar::Isa::kAmx);
    ctxpar::bench::FmaCeiling dot;
    if (avx2) {
      dot.instruction = "bf16 dot";
      dot.loop_isa = "none";
    } else {
      dot = ctxpar::bench::measure_bf16_dot_ceiling(t);
    }
    if (json) {
      std::printf("%s\n",
                  fmt::format(R"({{"threads": {}, "fma_gflop_per_s": {:.1f}, "fma_isa": "{}", )"
                              R"("bf16_dot_gflop_per_s": {:.1f}, "amx": {}, "pinned": {}}})",
                              t, fma.gflop_per_s, fma.loop_isa, dot.gflop_per_s,
                              !avx2 && ctxpar::cpu_features().amx_bf16 ? "true" : "false",
                              fma.pinned ? "true" : "false")
                      .c_str());
    } else {
      std::printf("%s\n%s\n", ctxpar::bench::describe(fma).c_str(),
                  ctxpar::bench::describe(dot).c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}
