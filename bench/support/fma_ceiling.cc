#include "fma_ceiling.h"

#include <fmt/format.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <thread>
#include <vector>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/error.h"
#include "fma_loop.h"
#include "pinning.h"

namespace ctxpar::bench {
namespace {

// Without AVX2: the same chains on scalar floats (multiply, then add), the portable fallback.
float fma_loop_scalar(int64_t iterations) {
  float acc[detail::kFmaChains];
  for (int j = 0; j < detail::kFmaChains; ++j) acc[j] = 0.001f * static_cast<float>(j);
  volatile float va = 0.999f, vb = 1e-4f;
  const float a = va, b = vb;
  for (int64_t i = 0; i < iterations; ++i) {
    for (float& x : acc) x = x * a + b;
  }
  float sum = 0;
  for (float x : acc) sum += x;
  return sum;
}

struct Loop {
  float (*fn)(int64_t);
  int macs;  // multiply-adds per instruction
  const char* isa;
};

// The widest loop the CPU runs up to `at_most`, whatever CTXPAR_ISA allows the kernels (the
// ceiling is the machine's, as read_bandwidth.cc's is).
Loop fma_loop(Isa at_most) {
  switch (std::min(cpu_isa(), at_most)) {
    case Isa::kAmx:
    case Isa::kAvx512:
      return {detail::fma_loop_avx512, 16, "avx512"};
    case Isa::kAvx2:
      return {detail::fma_loop_avx2, 8, "avx2"};
    case Isa::kScalar:
      break;
  }
  return {fma_loop_scalar, 1, "scalar"};
}

constexpr int kPasses = 5;
// ~50 ms per pass at 5 vector FMAs per ns.
constexpr int64_t kIterations = 20'000'000;

FmaCeiling measure(const Loop& loop, const char* instruction, int threads) {
  CTXPAR_CHECK(threads >= 1, "{} ceiling: threads {} must be >= 1", instruction, threads);
  FmaCeiling c;
  c.instruction = instruction;
  c.threads = threads;
  c.loop_isa = loop.isa;
  const std::vector<int> cpus = detail::allowed_cpus();
  const bool pin = static_cast<int>(cpus.size()) >= threads;
  std::barrier sync(threads + 1);
  std::vector<float> sums(static_cast<size_t>(threads) * 16);  // a cache line apart
  std::vector<char> pinned(static_cast<size_t>(threads), 0);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      pinned[static_cast<size_t>(t)] = pin && detail::pin_to(cpus[static_cast<size_t>(t)]);
      for (int p = 0; p < kPasses; ++p) {
        sync.arrive_and_wait();  // start
        sums[static_cast<size_t>(t) * 16] += loop.fn(kIterations);
        sync.arrive_and_wait();  // done
      }
    });
  }
  const double flops =
      2.0 * detail::kFmaChains * loop.macs * static_cast<double>(kIterations) * threads;
  c.worst_gflop_per_s = 1e300;
  for (int p = 0; p < kPasses; ++p) {
    const auto t0 = std::chrono::steady_clock::now();
    sync.arrive_and_wait();
    sync.arrive_and_wait();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    c.gflop_per_s = std::max(c.gflop_per_s, flops / s / 1e9);
    c.worst_gflop_per_s = std::min(c.worst_gflop_per_s, flops / s / 1e9);
  }
  for (auto& w : workers) w.join();
  c.pinned = std::all_of(pinned.begin(), pinned.end(), [](char x) { return x != 0; });
  volatile float sink = 0;
  for (float s : sums) sink = sink + s;
  return c;
}

}  // namespace

FmaCeiling measure_fma_ceiling(int threads, Isa at_most) {
  return measure(fma_loop(at_most), "FMA", threads);
}

FmaCeiling measure_bf16_dot_ceiling(int threads) {
  if (!cpu_features().avx512_bf16) {
    CTXPAR_CHECK(threads >= 1, "bf16 dot ceiling: threads {} must be >= 1", threads);
    FmaCeiling none;
    none.instruction = "bf16 dot";
    none.threads = threads;
    none.loop_isa = "none";
    return none;
  }
  return measure({detail::dot_loop_avx512bf16, 32, "avx512bf16"}, "bf16 dot", threads);
}

std::string describe(const FmaCeiling& c) {
  if (c.gflop_per_s == 0) return fmt::format("{}: not on this CPU", c.instruction);
  return fmt::format("{} {:.1f} GFLOP/s ({} thread{}{}, {}, best of {} passes; worst {:.1f})",
                     c.instruction, c.gflop_per_s, c.threads, c.threads == 1 ? "" : "s",
                     c.pinned ? " pinned" : " unpinned", c.loop_isa, kPasses, c.worst_gflop_per_s);
}

}  // namespace ctxpar::bench
