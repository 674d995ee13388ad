// FP8 decode speed against ceilings measured in the same run (DESIGN.md §7).
//
// - Read bandwidth: the shared ceiling (bench/support/read_bandwidth.h), 1 and 2 threads: the
//   ceiling of a memory-bound decode.
// - FP8 decode linears (bf16 activations): W [out, in] e4m3 with 128×128 f32 scales, one token
//   at DeepSeek-V3 shapes 7168 × 18432 (down_proj: out × in) and 2048 × 7168 (an expert's gate /
//   up_proj), 1 and 2 threads, and on 1 thread the short-row shapes 24576 × 1536 (q_b_proj) and
//   7168 × 2048 (an expert's down_proj); 2 to 64 tokens (batched decode) at 7168 × 18432.
//   Enough copies of W are rotated that their total exceeds 1 GiB, so every call reads W from
//   DRAM. Reported: GB/s of weight + scale bytes per call, and "of_read" = that / the read
//   ceiling of the same thread count (goal >= 0.8); the label names the ISA and the kernel
//   (Fp8Linear::kernel_for: gemv-bf16 multiplies with AVX-512 BF16 dot products).
// - FP8 prefill (512 tokens) at an expert's gate / up_proj 2048 × 7168 and down_proj
//   7168 × 2048 (and a dense layer's 18432 × 7168 on 2 threads), 1 and 2 threads, f32 and
//   bf16 activations: GFLOP/s and "of_gemm" = that / the GEMM the path feeds with the
//   weights already dequantized (oneDNN's sgemm on f32 weights; with bf16 activations on a
//   CPU with native bf16 matmuls, that matmul on bf16 weights — the label says which), the
//   two alternated; with bf16 activations also power-of-two (ue8m0) block scales, which the
//   bf16 path folds into one product over the whole of K.
// - Decode tokens/s of a DeepSeek-V3-shaped model with dummy weights (hidden 7168, 128 heads,
//   MLA 1536/512, one dense layer and one MoE layer of 16 routed experts top-8 plus a shared
//   one, vocab 8192), FP8 linears (quantized at load) against the same model in bf16, both
//   with bf16 activations and KV: "fp8_over_bf16" (goal >= 1.7). Both models stay loaded and
//   alternate four timed rounds of 6 decode steps; the best round of each is reported.
//
// Run: build/bench/fp8/fp8_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/comm/parallel_groups.h"
#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/thread_pool.h"
#include "ctxpar/kernels/linear.h"
#include "ctxpar/kernels/linear_fp8.h"
#include "ctxpar/kv/block_pool.h"
#include "ctxpar/kv/block_table.h"
#include "ctxpar/model/causal_lm.h"
#include "ctxpar/model/dummy_weights.h"
#include "ctxpar/model/sfa_mode.h"
#include "read_bandwidth.h"
#include "read_ceiling_benchmark.h"  // the ceiling as its own rows
#include "timing.h"

namespace ctxpar {
namespace {

using bench::Clock;
using bench::seconds_since;
using bench::thread_cpu_seconds;

// ---------------------------------------------------------------------------------------
// FP8 GEMV.

// Random e4m3 bytes (never the NaN code) and scales, from a fixed LCG: no time in quantizing.
kernels::Fp8Weight random_fp8(int64_t out, int64_t in, uint64_t seed) {
  kernels::Fp8Weight w{Tensor::empty({out, in}, DType::kF8E4M3),
                       Tensor::empty(kernels::fp8_scale_shape(out, in), DType::kF32)};
  auto* q = static_cast<uint8_t*>(w.weight.raw());
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (int64_t i = 0; i < w.weight.numel(); i += 8) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    for (int64_t j = 0; j < 8 && i + j < w.weight.numel(); ++j) {
      const auto b = static_cast<uint8_t>(x >> (8 * j));
      q[i + j] = (b & 0x7F) == 0x7F ? 0x7E : b;
    }
  }
  for (int64_t i = 0; i < w.scale_inv.numel(); ++i) w.scale_inv.data<float>()[i] = 1e-3f;
  return w;
}

void BM_Fp8Gemv(benchmark::State& state) {
  const int64_t out = state.range(0), in = state.range(1);
  const int threads = static_cast<int>(state.range(2));
  const int64_t tokens = state.range(3);
  const double ceiling = bench::read_ceiling(threads).gb_per_s;
  const int64_t bytes = out * in + shape_numel(kernels::fp8_scale_shape(out, in)) * 4;
  const int copies =
      static_cast<int>(std::max<int64_t>(2, ((int64_t{1} << 30) + bytes - 1) / bytes));
  std::vector<kernels::Fp8Linear> layers;
  for (int c = 0; c < copies; ++c)
    layers.emplace_back(random_fp8(out, in, static_cast<uint64_t>(c)), std::nullopt, DType::kBF16);
  ThreadPool pool(threads);
  Tensor x = Tensor::empty({tokens, in}, DType::kF32);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((i % 7) - 3);
  Tensor y = Tensor::empty({tokens, out}, DType::kF32);
  for (int c = 0; c < copies; ++c) layers[static_cast<size_t>(c)].forward(x, y, pool);  // warm up
  int64_t calls = 0;
  const auto t0 = Clock::now();
  const double c0 = thread_cpu_seconds();
  for (auto _ : state) {
    layers[static_cast<size_t>(calls % copies)].forward(x, y, pool);
    benchmark::DoNotOptimize(y.raw());
    ++calls;
  }
  const double cpu = thread_cpu_seconds() - c0;
  const double moved = static_cast<double>(bytes) * static_cast<double>(calls) / 1e9;
  const double gbs = moved / seconds_since(t0);
  state.counters["GB/s"] = gbs;
  state.counters["read_GB/s"] = ceiling;
  state.counters["of_read"] = gbs / ceiling;
  if (threads == 1) {  // one thread runs the GEMV on the calling thread
    state.counters["GB/s_cpu"] = moved / cpu;
    state.counters["of_read_cpu"] = moved / cpu / ceiling;
  }
  state.SetLabel(std::string("isa=") + std::string(isa_name(active_isa())) +
                 " kernel=" + std::string(layers[0].kernel_for(tokens)));
}
BENCHMARK(BM_Fp8Gemv)
    ->ArgNames({"out", "in", "threads", "tokens"})
    ->Args({7168, 18432, 1, 1})
    ->Args({7168, 18432, 2, 1})
    ->Args({2048, 7168, 1, 1})
    ->Args({2048, 7168, 2, 1})
    ->Args({24576, 1536, 1, 1})
    ->Args({7168, 2048, 1, 1})
    ->ArgsProduct({{7168}, {18432}, {1, 2}, {2, 3, 4, 8, 16, 32, 64}})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

// ---------------------------------------------------------------------------------------
// FP8 prefill against the GEMM its path feeds: with f32 activations the sgemm on the f32
// dequantized weights; with bf16 activations, where oneDNN has a native bf16 matmul (AVX-512
// BF16 / AMX), that matmul on the dequantized weights rounded to bf16 (one call, no K blocks),
// else again the sgemm (the bf16 x is rounded, then the f32 path runs).

void BM_Fp8Prefill(benchmark::State& state) {
  const int64_t out = state.range(0), in = state.range(1), tokens = 512;
  const int threads = static_cast<int>(state.range(2));
  const DType act = state.range(3) == 16 ? DType::kBF16 : DType::kF32;
  kernels::Fp8Weight w = random_fp8(out, in, 1);
  if (state.range(4) == 1) {  // ue8m0: powers of two, the bf16 path's one product over K
    for (int64_t i = 0; i < w.scale_inv.numel(); ++i) w.scale_inv.data<float>()[i] = 0x1p-10f;
  }
  const kernels::Fp8Linear fp8(w, std::nullopt, act);
  const Tensor dense = kernels::dequantize_fp8(w);
  const kernels::Linear gemm(act == DType::kBF16 ? dense.to(DType::kBF16) : dense);
  ThreadPool pool(threads);
  Tensor x = Tensor::empty({tokens, in}, DType::kF32);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((i % 7) - 3);
  Tensor y = Tensor::empty({tokens, out}, DType::kF32);
  fp8.forward(x, y, pool);  // warm up: primitives and scratch
  gemm.forward(x, y, pool);
  double best_fp8 = 1e300, best_gemm = 1e300;
  for (auto _ : state) {
    best_fp8 = std::min(best_fp8, bench::timed([&] { fp8.forward(x, y, pool); }).wall);
    best_gemm = std::min(best_gemm, bench::timed([&] { gemm.forward(x, y, pool); }).wall);
    benchmark::DoNotOptimize(y.raw());
  }
  const double flops = 2.0 * static_cast<double>(tokens * out * in);
  state.counters["GFLOP/s"] = flops / best_fp8 / 1e9;
  state.counters["gemm_GFLOP/s"] = flops / best_gemm / 1e9;
  state.counters["of_gemm"] = best_gemm / best_fp8;
  state.SetLabel(std::string("isa=") + std::string(isa_name(active_isa())) + " gemm=" +
                 (act == DType::kBF16 && cpu_features().avx512_bf16 && active_isa() >= Isa::kAvx512
                      ? "bf16"
                      : "f32"));
}
BENCHMARK(BM_Fp8Prefill)
    ->ArgNames({"out", "in", "threads", "act", "ue8m0"})
    ->ArgsProduct({{2048}, {7168}, {1, 2}, {32, 16}, {0}})
    ->ArgsProduct({{7168}, {2048}, {1, 2}, {32, 16}, {0}})
    ->ArgsProduct({{18432}, {7168}, {2}, {32, 16}, {0}})
    ->ArgsProduct({{2048}, {7168}, {1, 2}, {16}, {1}})
    ->ArgsProduct({{7168}, {2048}, {1, 2}, {16}, {1}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

// ---------------------------------------------------------------------------------------
// Decode tokens/s, FP8 vs bf16.

constexpr const char* kDeepseekShaped = R"json({
  "architectures": ["DeepseekV3ForCausalLM"], "vocab_size": 8192, "hidden_size": 7168,
  "intermediate_size": 18432, "moe_intermediate_size": 2048, "num_hidden_layers": 2,
  "num_attention_heads": 128, "q_lora_rank": 1536, "kv_lora_rank": 512,
  "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "n_routed_experts": 16,
  "n_shared_experts": 1, "num_experts_per_tok": 8, "first_k_dense_replace": 1, "n_group": 1,
  "topk_group": 1, "norm_topk_prob": true, "routed_scaling_factor": 2.5,
  "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "dtype": "bfloat16",
  "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}
})json";

// Seconds per decode step (batch 1): wall time, and the calling thread's CPU time (all of the
// work when threads == 1).
struct StepTime {
  double wall = 0;
  double cpu = 0;
};

// One model (FP8 or bf16 linears) with one request that a 16-token prefill started.
class DecodeRun {
 public:
  DecodeRun(bool fp8, const model::DummyWeights& weights, const ParallelGroups& groups,
            ThreadPool& pool)
      : config_(model::parse_model_config(kDeepseekShaped, "deepseek-shaped")),
        options_(make_options(fp8)),
        ctx_{weights, groups, options_, pool},
        lm_(config_, ctx_),
        builder_(model::make_metadata_builder(config_, ctx_)),
        blocks_(kBlocks),
        table_(blocks_, kv::DcpLayout(1, options_.block_size, 1)) {
    lm_.allocate_kv_cache(kBlocks);
    step(16);
    step(1);  // warm up the decode path
  }

  StepTime time_steps(int steps) {
    const auto t0 = Clock::now();
    const double c0 = thread_cpu_seconds();
    for (int s = 0; s < steps; ++s) step(1);
    return {seconds_since(t0) / steps, (thread_cpu_seconds() - c0) / steps};
  }

 private:
  static constexpr int64_t kBlocks = 16;  // room for the prefill and every timed step

  static model::ModelOptions make_options(bool fp8) {
    model::ModelOptions o;
    o.weight_dtype = DType::kBF16;  // bf16 activations (vLLM --dtype bfloat16) in both runs
    o.kv_cache_dtype = DType::kBF16;
    o.quantize_fp8 = fp8;
    return o;
  }

  void step(int64_t n) {
    table_.grow(done_ + n);
    attention::ScheduledRequest r;
    r.num_computed = done_;
    r.num_scheduled = n;
    r.block_table.assign(table_.ids().begin(), table_.ids().end());
    const std::vector<attention::ScheduledRequest> batch{r};
    const auto md = builder_->build(batch);
    Tensor ids = Tensor::empty({n}, DType::kI32);
    for (int64_t i = 0; i < n; ++i)
      ids.data<int32_t>()[i] = static_cast<int32_t>((done_ + i) * 37 % 8192);
    Tensor rows = Tensor::empty({1}, DType::kI64);
    rows.data<int64_t>()[0] = n - 1;
    benchmark::DoNotOptimize(lm_.forward(md, ids, rows).raw());
    done_ += n;
  }

  model::ModelConfig config_;
  model::ModelOptions options_;
  model::ModelContext ctx_;
  model::CausalLM lm_;
  std::unique_ptr<attention::AttentionMetadataBuilder> builder_;
  kv::BlockPool blocks_;
  kv::BlockTable table_;
  int64_t done_ = 0;
};

// Both models stay loaded and their timed rounds alternate (best round of each kept), so a
// change in the machine's speed during the run moves both alike.
void BM_DecodeFp8VsBf16(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  StepTime fp8{1e9, 1e9}, bf16{1e9, 1e9};
  for (auto _ : state) {
    run_inprocess_ranks(1, [&](Communicator& world) {
      const ParallelGroups groups(world, 1, 1);
      ThreadPool pool(threads);
      const model::DummyWeights weights(11);
      DecodeRun fp8_run(true, weights, groups, pool), bf16_run(false, weights, groups, pool);
      for (int round = 0; round < 4; ++round) {
        const StepTime f = fp8_run.time_steps(6), b = bf16_run.time_steps(6);
        fp8 = {std::min(fp8.wall, f.wall), std::min(fp8.cpu, f.cpu)};
        bf16 = {std::min(bf16.wall, b.wall), std::min(bf16.cpu, b.cpu)};
      }
    });
  }
  state.counters["fp8_tok/s"] = 1.0 / fp8.wall;
  state.counters["bf16_tok/s"] = 1.0 / bf16.wall;
  state.counters["fp8_over_bf16"] = bf16.wall / fp8.wall;
  if (threads == 1) state.counters["fp8_over_bf16_cpu"] = bf16.cpu / fp8.cpu;
  state.SetLabel(std::string("isa=") + std::string(isa_name(active_isa())));
}
BENCHMARK(BM_DecodeFp8VsBf16)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kSecond)
    ->Iterations(1);

}  // namespace
}  // namespace ctxpar

BENCHMARK_MAIN();
