// The linears of a decode and a prefill step against ceilings measured in the same run
// (DESIGN.md §7), on the Llama-3.2-1B shape (hidden 2048, FFN 8192, 32 q / 8 KV heads of 64):
// per layer the fused qkv [3072, 2048], o_proj [2048, 2048], fused gate_up [16384, 2048] and
// down_proj [2048, 8192], 16 layers (1.9 GiB in bf16; 8 layers in f32), so the weights stream
// from DRAM as in the model and never fit the last-level cache.
//
// BM_DecodeLinears (tokens 1..8): weight bytes read per second and their fraction of the read
// ceiling (bench/support/read_bandwidth.h) with the same thread count — the roofline of a
// decode step is weight bytes / read bandwidth.
// BM_PrefillLinears (tokens 512): GFLOP/s of the same linears and their fraction of the FMA
// ceiling (bench/support/fma_ceiling.h) with the same thread count; bf16 also of the
// vdpbf16ps ceiling where the CPU has AVX-512 BF16.
// Wall-time rates; with 1 thread also from the thread's CPU time (suffix _cpu).
//
// Run: build/bench/kernels_linear/kernels_linear_bench [--benchmark_filter=Decode]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/half.h"
#include "ctxpar/core/tensor.h"
#include "ctxpar/core/thread_pool.h"
#include "ctxpar/kernels/linear.h"
#include "ctxpar/kernels/linear_gemm.h"
#include "ctxpar/kernels/linear_gemv.h"
#include "ctxpar/kernels/linear_matmul_cache.h"
#include "fma_ceiling.h"
#include "read_bandwidth.h"
#include "timing.h"

namespace ctxpar::kernels {
namespace {

constexpr int64_t kHidden = 2048, kFfn = 8192, kQkv = 3072;

// Weights of `layers` layers in `dtype`, random values (the contents do not matter for speed,
// but every page is written so it is really there).
struct LayerStack {
  std::vector<Linear> linears;
  int64_t weight_bytes = 0;
  int64_t flops_per_token = 0;
};

LayerStack make_stack(DType dtype, int layers) {
  LayerStack s;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-0.05f, 0.05f);
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {kQkv, kHidden}, {kHidden, kHidden}, {2 * kFfn, kHidden}, {kHidden, kFfn}};
  for (int l = 0; l < layers; ++l) {
    for (const auto& [out, in] : shapes) {
      Tensor w = Tensor::empty({out, in}, dtype);
      if (dtype == DType::kBF16) {
        auto* p = static_cast<uint16_t*>(w.raw());
        for (int64_t i = 0; i < w.numel(); ++i) p[i] = bf16::from_f32(u(rng));
      } else {
        for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = u(rng);
      }
      s.weight_bytes += static_cast<int64_t>(w.nbytes());
      s.flops_per_token += 2 * out * in;
      s.linears.emplace_back(std::move(w));
    }
  }
  return s;
}

LayerStack& stack(DType dtype) {
  static std::unique_ptr<LayerStack> bf16, f32;
  std::unique_ptr<LayerStack>& slot = dtype == DType::kBF16 ? bf16 : f32;
  if (!slot) {
    // Only one stack is held at a time: together they would be 3.9 GiB.
    bf16.reset();
    f32.reset();
    slot = std::make_unique<LayerStack>(make_stack(dtype, dtype == DType::kBF16 ? 16 : 8));
  }
  return *slot;
}

Tensor random_x(int64_t tokens, int64_t in) {
  Tensor x = Tensor::empty({tokens, in}, DType::kF32);
  std::mt19937 rng(2);
  std::normal_distribution<float> d;
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = d(rng);
  return x;
}

// One pass over every linear of the stack (x: the [tokens, 2048] and [tokens, 8192] inputs).
bench::Timing run_stack(const LayerStack& s, ThreadPool& pool, std::vector<Tensor>& xs,
                        std::vector<Tensor>& ys) {
  return bench::timed([&] {
    for (size_t i = 0; i < s.linears.size(); ++i) {
      const Linear& l = s.linears[i];
      Tensor& x = xs[static_cast<size_t>(l.in_features() == kFfn)];
      Tensor& y = ys[i % 4];
      l.forward(x, y, pool);
    }
    benchmark::DoNotOptimize(ys[0].raw());
  });
}

void run_bench(benchmark::State& state, DType dtype, int64_t tokens, int threads) {
  const bench::ReadCeiling ceiling = bench::read_ceiling(threads);
  LayerStack& s = stack(dtype);
  ThreadPool pool(threads);
  std::vector<Tensor> xs = {random_x(tokens, kHidden), random_x(tokens, kFfn)};
  std::vector<Tensor> ys;
  for (size_t i = 0; i < 4; ++i) {
    ys.push_back(Tensor::empty({tokens, s.linears[i].out_features()}, DType::kF32));
  }
  run_stack(s, pool, xs, ys);  // warm-up: primitives, scratch, page tables
  double best = 1e300, best_cpu = 1e300;
  for (auto _ : state) {
    const bench::Timing t = run_stack(s, pool, xs, ys);
    state.SetIterationTime(t.wall);
    best = std::min(best, t.wall);
    best_cpu = std::min(best_cpu, t.cpu);
  }
  const double gbps = static_cast<double>(s.weight_bytes) / best / 1e9;
  state.counters["weight_GB/s"] = gbps;
  state.counters["read_GB/s"] = ceiling.gb_per_s;
  state.counters["frac_of_read_bw"] = gbps / ceiling.gb_per_s;
  const double gflops = static_cast<double>(s.flops_per_token * tokens) / best / 1e9;
  state.counters["GFLOP/s"] = gflops;
  if (tokens > detail::kGemvMaxTokens) {
    // Measured right after the timed passes: the clock of these VMs moves by 10-20% over minutes.
    const bench::FmaCeiling fma = bench::measure_fma_ceiling(threads);
    state.counters["fma_GFLOP/s"] = fma.gflop_per_s;
    state.counters["frac_of_fma_peak"] = gflops / fma.gflop_per_s;
    if (threads == 1) {
      state.counters["frac_of_fma_peak_cpu"] =
          static_cast<double>(s.flops_per_token * tokens) / best_cpu / 1e9 / fma.gflop_per_s;
    }
    // A bf16 GEMM on vdpbf16ps (Zen 4: twice the FMA's multiply-adds) against that peak.
    const bench::FmaCeiling dot = bench::measure_bf16_dot_ceiling(threads);
    if (dtype == DType::kBF16 && dot.gflop_per_s > 0) {
      state.counters["dot_GFLOP/s"] = dot.gflop_per_s;
      state.counters["frac_of_dot_peak"] = gflops / dot.gflop_per_s;
    }
  }
  // On a shared machine: what the code does while it runs (1 thread: all work is on the
  // calling thread, so its CPU time is the kernel's time without the time others took).
  if (threads == 1) {
    state.counters["weight_GB/s_cpu"] = static_cast<double>(s.weight_bytes) / best_cpu / 1e9;
    state.counters["frac_cpu"] =
        static_cast<double>(s.weight_bytes) / best_cpu / 1e9 / ceiling.gb_per_s;
  }
  std::string label =
      std::string(dtype_name(dtype)) + " isa " + std::string(isa_name(active_isa()));
  if (tokens <= detail::kGemvMaxTokens) {  // which GEMV kernel ran
    label +=
        " gemv " +
        std::string(detail::gemv_kernel_name(detail::gemv_kernel(active_isa(), dtype, tokens)));
  } else if (dtype == DType::kBF16) {  // which GEMM the bf16 prefill ran
    label += " gemm " + std::string(detail::bf16_gemm_name(detail::bf16_gemm(active_isa())));
  }
  if (dtype == DType::kBF16 && cpu_features().avx512_bf16) {  // what chose it
    label += " (vdpbf16ps/FMA MACs " + std::to_string(detail::bf16_dot_to_fma_mac_ratio()) + ")";
  }
  state.SetLabel(label);
}

void BM_DecodeLinears(benchmark::State& state) {
  run_bench(state, state.range(0) == 16 ? DType::kBF16 : DType::kF32, state.range(1),
            static_cast<int>(state.range(2)));
}
BENCHMARK(BM_DecodeLinears)
    ->ArgNames({"bits", "tokens", "threads"})
    ->ArgsProduct({{16, 32}, {1, 4, 8}, {1, 2}})
    ->UseManualTime()
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond);

void BM_PrefillLinears(benchmark::State& state) {
  run_bench(state, state.range(0) == 16 ? DType::kBF16 : DType::kF32, 512,
            static_cast<int>(state.range(1)));
}
BENCHMARK(BM_PrefillLinears)
    ->ArgNames({"bits", "threads"})
    ->ArgsProduct({{16, 32}, {1, 2}})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ctxpar::kernels

BENCHMARK_MAIN();
