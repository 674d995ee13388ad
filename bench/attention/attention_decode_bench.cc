// One attention layer, one request with a long context, T = 2 in-process ranks: the decode
// step time with N = 1 and with N = 2, the share of the step spent in collectives, and the KV
// bytes per rank. With DCP each rank reads half the cache but, its query heads gathered from
// the group, does the same FLOPs as without: N = 2 is faster where the KV read bounds the step
// (GqaFewHeads64K) and less where the arithmetic does (Gqa64K, 16 query heads per KV row;
// Mla64K on CPUs without AMX).
//
//   build/bench/attention/attention_decode_bench [--benchmark_filter=Mla]
//
// The cache is filled with random rows directly (prefilling 64K tokens through the layer
// would dominate the run); every step decodes one token at the end of the context. A step
// runs as many layers, each with its own cache, as add up to beyond the last-level cache
// (bench/support: >= 1 GiB and 4x the LLC), as a model's layers do: one layer's 32-72 MiB
// would stay in a large LLC between steps and read faster than DRAM.
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <random>

#include "ctxpar/attention/context_parallel/dcp_metadata_builder.h"
#include "ctxpar/attention/context_parallel/gqa_dcp_attention.h"
#include "ctxpar/attention/context_parallel/mla_dcp_attention.h"
#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/comm/timed_communicator.h"
#include "read_bandwidth.h"

namespace ctxpar {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kTp = 2;
constexpr int64_t kContext = 65536;
constexpr int kBlock = 64;
constexpr int kSteps = 2;  // each over every layer

void fill_random(Tensor& t, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  if (t.dtype() == DType::kBF16) {
    for (int64_t i = 0; i < t.numel(); ++i) t.data<bf16>()[i] = bf16(d(rng));
  } else {
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  }
}

// The first layer's blocks random, copied to the other layers (random numbers for GiBs of
// cache would dominate the run; every layer is still read from memory).
void fill_layers(Tensor& cache, int64_t blocks_per_layer, uint32_t seed) {
  Tensor first = cache.slice(0, 0, blocks_per_layer);
  fill_random(first, seed);
  for (int64_t b = blocks_per_layer; b < cache.size(0); b += blocks_per_layer)
    cache.slice(0, b, b + blocks_per_layer).copy_from(first);
}

// kGqa: 32 query heads over one replicated KV head (16 per rank, 16 FLOP per KV byte: the
// arithmetic bounds the step, and DCP, which gathers every head onto every rank, leaves each
// rank's FLOPs unchanged); kGqaFewHeads: 4 over one (2 per rank, 2 FLOP per byte: the KV read
// bounds it, and DCP halves that).
enum class Kind { kGqa, kGqaFewHeads, kMla };

// Runs kSteps decode steps on kTp ranks with DCP size n; returns seconds per step (slowest
// rank), the collective share and the KV bytes per rank.
struct Result {
  double step_seconds;
  double comm_share;
  int64_t kv_bytes_per_rank;
};

Result run(Kind kind, int n) {
  const kv::DcpLayout layout(n, kBlock, 1);
  const int64_t seq_len = kContext + 1;
  const int64_t blocks = layout.num_virtual_blocks(seq_len);  // per layer
  // The layer count is the one N = 1 needs, so both N run the same layers.
  const int64_t bytes_per_token = kind == Kind::kMla ? 576 * 2 : 2 * 128 * 2;
  const int64_t layers = bench::copies_beyond_llc(
      kv::DcpLayout(1, kBlock, 1).num_virtual_blocks(seq_len) * kBlock * bytes_per_token);
  auto comm_ns = std::make_shared<std::atomic<int64_t>>(0);  // both ranks' collective time
  std::atomic<int64_t> step_ns{0}, kv_bytes{0};
  run_inprocess_ranks(kTp, [&](Communicator& world) {
    TimedCommunicator dcp(world.split(world.rank() / n, world.rank()), comm_ns);
    ThreadPool pool(1);
    // Layer l's blocks are [l·blocks, (l + 1)·blocks) of one cache tensor.
    std::vector<attention::AttentionMetadata> md;
    for (int64_t l = 0; l < layers; ++l) {
      std::vector<attention::ScheduledRequest> batch(1);
      batch[0].num_computed = kContext;
      batch[0].num_scheduled = 1;
      for (int64_t b = 0; b < blocks; ++b)
        batch[0].block_table.push_back(static_cast<int32_t>(l * blocks + b));
      md.push_back(n > 1 ? attention::DcpMetadataBuilder(layout, dcp.rank()).build(batch)
                         : attention::AttentionMetadataBuilder(kBlock).build(batch));
    }
    std::mt19937 rng(7 + world.rank());
    std::normal_distribution<float> g;
    auto random = [&](const Shape& s) {
      Tensor t = Tensor::empty(s, DType::kF32);
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = g(rng);
      return t;
    };
    std::function<void()> step;
    std::unique_ptr<attention::GqaAttention> gqa;
    std::unique_ptr<attention::MlaAttention> mla;
    Tensor q, k, v, kv_c, k_pe, out;
    if (kind != Kind::kMla) {
      // Query heads per rank over one replicated KV head of 128.
      const int64_t heads = kind == Kind::kGqa ? 16 : 2;
      const attention::GqaDims dims{heads, 1, 128, 0.088f};
      Tensor cache = Tensor::empty({layers * blocks, kBlock, 2, 1, 128}, DType::kBF16);
      fill_layers(cache, blocks, 1);
      kv_bytes = static_cast<int64_t>(cache.nbytes()) / layers;
      if (n > 1) {
        gqa = std::make_unique<attention::GqaDcpAttention>(
            dims, cache.select(2, 0), cache.select(2, 1), pool, dcp,
            attention::DcpCommPlan::kAllGatherReduceScatter);
      } else {
        gqa = std::make_unique<attention::GqaAttention>(dims, cache.select(2, 0),
                                                        cache.select(2, 1), pool);
      }
      q = random({1, heads, 128});
      k = random({1, 1, 128});
      v = random({1, 1, 128});
      out = Tensor::empty({1, heads, 128}, DType::kF32);
      step = [&] {
        for (const auto& m : md) gqa->forward(m, q, k, v, out);
      };
    } else {
      // DeepSeek-V3 dims with 16 heads in all (8 per rank): latent 512 + rope 64.
      attention::MlaDims dims;
      dims.num_heads = 8;
      dims.kv_lora_rank = 512;
      dims.qk_nope_head_dim = 128;
      dims.qk_rope_head_dim = 64;
      dims.v_head_dim = 128;
      dims.scale = 0.07f;
      Tensor cache = Tensor::empty({layers * blocks, kBlock, 576}, DType::kBF16);
      fill_layers(cache, blocks, 2);
      kv_bytes = static_cast<int64_t>(cache.nbytes()) / layers;
      Tensor kv_b = random({8 * 256, 512});
      if (n > 1) {
        mla = std::make_unique<attention::MlaDcpAttention>(
            dims, cache, kv_b, pool, dcp, attention::DcpCommPlan::kAllGatherReduceScatter);
      } else {
        mla = std::make_unique<attention::MlaAttention>(dims, cache, kv_b, pool);
      }
      q = random({1, 8, 192});
      kv_c = random({1, 512});
      k_pe = random({1, 64});
      out = Tensor::empty({1, 8, 128}, DType::kF32);
      step = [&] {
        for (const auto& m : md) mla->forward(m, q, kv_c, k_pe, out);
      };
    }
    step();           // warm caches and the kernels' scratch
    world.barrier();  // both ranks out of the warm-up's collectives, then one reset
    if (world.rank() == 0) *comm_ns = 0;
    world.barrier();
    const auto start = Clock::now();
    for (int s = 0; s < kSteps; ++s) step();
    const int64_t ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
    int64_t seen = step_ns.load();
    while (ns > seen && !step_ns.compare_exchange_weak(seen, ns)) {
    }
  });
  const double seconds =
      static_cast<double>(step_ns.load()) * 1e-9 / (kSteps * static_cast<double>(layers));
  // comm_ns sums both ranks' collective time: compare with both ranks' step time.
  const double share =
      static_cast<double>(comm_ns->load()) / (static_cast<double>(step_ns.load()) * kTp);
  return {seconds, share, kv_bytes.load()};
}

void BM_DecodeStep(benchmark::State& state, Kind kind) {
  const int n = static_cast<int>(state.range(0));
  Result r{};
  for (auto _ : state) {
    r = run(kind, n);
    state.SetIterationTime(r.step_seconds);
  }
  state.counters["dcp"] = n;
  state.counters["comm_share"] = r.comm_share;
  state.counters["kv_MiB_per_rank"] = static_cast<double>(r.kv_bytes_per_rank) / (1 << 20);
  state.counters["kv_GBps_per_rank"] =
      static_cast<double>(r.kv_bytes_per_rank) / r.step_seconds / 1e9;
}

BENCHMARK_CAPTURE(BM_DecodeStep, Gqa64K, Kind::kGqa)
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_DecodeStep, GqaFewHeads64K, Kind::kGqaFewHeads)
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_DecodeStep, Mla64K, Kind::kMla)
    ->Arg(1)
    ->Arg(2)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
}  // namespace ctxpar

BENCHMARK_MAIN();
