// Prefill of one long prompt through builtin:tiny-deepseek-v32 (dummy weights, f32, its
// max_position_embeddings raised so the rope table covers the prompt) on T in-process ranks:
// native SFA (heads split over TP; every rank runs the whole Lightning Indexer and the
// replicated projections for every token) against DSA-CP (each rank runs its contiguous
// slice of the tokens with all heads, the o_proj weight gathered per prefill step). The
// prompt is prefilled in chunks of `chunk` tokens (chunked prefill, B = 64), KV and index
// keys written to the cache as a prefill node would.
//
// Reported per benchmark (rank 0's wall time of the whole prefill, ranks synchronised):
//   tok_s              prompt tokens per second
//   idx_GFLOP_s        Lightning Indexer math done by all ranks per second (2·H_i·D per
//                      scored key; native TP scores every key on every rank, DSA-CP once)
//   idx_gemm_frac      that rate over the machine's f32 GEMM rate (ceiling, same run)
//   o_proj_gather_KiB  o_proj bytes one rank receives per prefill step (all layers): the
//                      full-weight all-gather of DSA-CP, (T - 1)/T of every layer's o_proj
//   v32_gather_MiB     the same for DeepSeek-V3.2's o_proj (7168 × 128·128 bf16, 61 layers)
//
// Run: build-*/bench/dsa_cp/dsa_cp_prefill_bench [--benchmark_filter=...]
// The default list runs a 32K-token prompt; on a small machine filter to /8192/ first.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/comm/parallel_groups.h"
#include "ctxpar/kernels/linear.h"
#include "ctxpar/kv/block_table.h"
#include "ctxpar/model/causal_lm.h"
#include "ctxpar/model/dummy_weights.h"
#include "ctxpar/model/sfa_mode.h"

namespace ctxpar {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBlock = 64;

int machine_threads() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The machine's f32 GEMM rate with every core, measured once per run.
double gemm_flops_per_s() {
  static const double rate = [] {
    ThreadPool pool(machine_threads());
    omp_set_num_threads(machine_threads());
    const int64_t m = 512, k = 2048, o = 2048;
    Tensor w = Tensor::empty({o, k}, DType::kF32), x = Tensor::empty({m, k}, DType::kF32);
    w.fill(0.01);
    x.fill(0.5);
    const kernels::Linear linear(w);
    Tensor y = Tensor::empty({m, o}, DType::kF32);
    double best = 0;
    for (int rep = 0; rep < 5; ++rep) {
      const auto t0 = Clock::now();
      linear.forward(x, y, pool);
      best = std::max(best, 2.0 * m * k * o / seconds(t0, Clock::now()));
    }
    return best;
  }();
  return rate;
}

model::ModelConfig bench_config(int64_t prompt) {
  model::ModelConfig c = model::resolve_model_config("builtin:tiny-deepseek-v32");
  // YaRN factor 4: the rope table covers max_position_embeddings · 4 positions.
  c.max_position_embeddings = std::max<int64_t>(c.max_position_embeddings, prompt / 4 + 1);
  return c;
}

void BM_Prefill(benchmark::State& state) {
  const int t = static_cast<int>(state.range(0));
  const bool dsa_cp = state.range(1) != 0;
  const int64_t prompt = state.range(2), chunk = state.range(3);
  const model::ModelConfig config = bench_config(prompt);
  model::ModelOptions options;
  options.block_size = kBlock;
  options.enable_dsa_cp = dsa_cp;
  const model::DummyWeights weights(7);
  std::vector<int32_t> ids(static_cast<size_t>(prompt));
  std::mt19937 rng(11);
  for (int32_t& id : ids) id = static_cast<int32_t>(rng() % 256);
  const int32_t num_blocks = static_cast<int32_t>((prompt + kBlock - 1) / kBlock) + 1;
  double total_s = 0;
  int64_t gathered = 0, steps = 0;
  for (auto _ : state) {
    run_inprocess_ranks(t, [&](Communicator& world) {
      ParallelGroups groups(world, t, 1);
      const int threads = std::max(1, machine_threads() / t);
      omp_set_num_threads(threads);  // this rank thread's oneDNN team
      ThreadPool pool(threads);
      const model::ModelContext ctx{weights, groups, options, pool};
      model::CausalLM lm(config, ctx);
      lm.allocate_kv_cache(num_blocks);
      const auto builder = model::make_metadata_builder(config, ctx);
      std::vector<int32_t> table(static_cast<size_t>(num_blocks));
      for (int32_t b = 0; b < num_blocks; ++b) table[static_cast<size_t>(b)] = b;
      world.barrier();
      const auto t0 = Clock::now();
      int64_t done = 0, my_steps = 0;
      while (done < prompt) {
        const int64_t n = std::min(chunk, prompt - done);
        const attention::AttentionMetadata md =
            builder->build(std::vector<attention::ScheduledRequest>{{done, n, table}});
        Tensor token_ids = Tensor::empty({n}, DType::kI32);
        std::copy(ids.begin() + done, ids.begin() + done + n, token_ids.data<int32_t>());
        Tensor last = Tensor::empty({1}, DType::kI64);
        last.data<int64_t>()[0] = n - 1;
        benchmark::DoNotOptimize(lm.forward(md, token_ids, last));
        done += n;
        ++my_steps;
      }
      world.barrier();
      if (world.rank() == 0) {
        total_s += seconds(t0, Clock::now());
        gathered += lm.full_weight_workspace().gathered_bytes();
        steps += my_steps;
      }
    });
    state.SetIterationTime(total_s);
  }
  const double runs = static_cast<double>(state.iterations());
  const double keys = static_cast<double>(prompt) * static_cast<double>(prompt + 1) / 2.0;
  const double idx_flops =
      keys * 2.0 *
      static_cast<double>(config.indexer.index_n_heads * config.indexer.index_head_dim) *
      static_cast<double>(config.num_hidden_layers) * (dsa_cp ? 1 : t);
  state.counters["tok_s"] = static_cast<double>(prompt) * runs / total_s;
  state.counters["idx_GFLOP_s"] = idx_flops * runs / total_s / 1e9;
  state.counters["idx_gemm_frac"] = idx_flops * runs / total_s / gemm_flops_per_s();
  state.counters["o_proj_gather_KiB"] =
      static_cast<double>(gathered) / static_cast<double>(std::max<int64_t>(steps, 1)) / 1024.0;
  const double v32_o_proj = 7168.0 * 128 * 128 * 2 * 61;
  state.counters["v32_gather_MiB"] = dsa_cp ? v32_o_proj * (t - 1) / t / (1 << 20) : 0.0;
  state.SetLabel(dsa_cp ? "DSA-CP" : "native SFA");
}

// Args: T, DSA-CP (0/1), prompt tokens, chunk tokens.
BENCHMARK(BM_Prefill)
    ->ArgNames({"T", "dsa_cp", "prompt", "chunk"})
    ->Args({1, 0, 32768, 8192})
    ->Args({2, 0, 32768, 8192})
    ->Args({2, 1, 32768, 8192})
    ->Args({4, 0, 32768, 8192})
    ->Args({4, 1, 32768, 8192})
    ->Args({1, 0, 8192, 8192})
    ->Args({2, 0, 8192, 8192})
    ->Args({2, 1, 8192, 8192})
    ->Args({4, 0, 8192, 8192})
    ->Args({4, 1, 8192, 8192})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace ctxpar

BENCHMARK_MAIN();
