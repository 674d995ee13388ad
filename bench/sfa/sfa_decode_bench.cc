// Decode step of one sparse-attention (SFA) layer at a 64K-token context, index_topk 2048,
// DeepSeek-V3.2 attention shapes (128 heads, latent 512 + 64, 64 indexer heads of 128), f32
// caches, B = 64, I = 1, on N = T in-process ranks: N = 1, and N = 2, 4 with the replicated
// and the sharded indexer. The step is the attention part of the layer: the indexer (write the
// new key, score every cached key, top-k) and the sparse MLA (q absorption, attention over
// the selected keys with the DCP merge, W_UV); the dense projections around it are left out.
//
// Reported per benchmark (rank 0's wall time per step, all ranks synchronised by barriers):
//   indexer_share       indexer time / step time
//   latent_MiB, index_MiB   KV cache bytes per rank (latent shard, index keys)
//   idx_GFLOP_s         indexer math of all ranks per second (2·H_i·D per scored key)
//   idx_gemm_frac       that rate over the machine's f32 GEMM rate (ceiling, same run)
//   idx_read_frac       index-key bytes read by all ranks per second over the read bandwidth
//
// Run: build-*/bench/sfa/sfa_decode_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "ctxpar/attention/context_parallel/dcp_metadata_builder.h"
#include "ctxpar/attention/context_parallel/sfa_dcp_attention.h"
#include "ctxpar/attention/context_parallel/sharded_lightning_indexer.h"
#include "ctxpar/attention/lightning_indexer.h"
#include "ctxpar/attention/sfa_attention.h"
#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/comm/parallel_groups.h"
#include "ctxpar/kernels/linear.h"
#include "read_bandwidth.h"

namespace ctxpar {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kContext = 65536;
constexpr int64_t kTopk = 2048;
constexpr int kBlock = 64;
constexpr int64_t kHeads = 128, kLora = 512, kRope = 64, kNope = 128, kV = 128;
constexpr int64_t kIndexHeads = 64, kIndexDim = 128;

int machine_threads() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

Tensor random_tensor(const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

// Ceilings of this machine, measured once per run with every core (the read ceiling is the
// shared one, bench/support/read_bandwidth.h).
struct Ceilings {
  double read_bytes_per_s = 0;
  double gemm_flops_per_s = 0;
};

const Ceilings& ceilings() {
  static const Ceilings c = [] {
    Ceilings out;
    out.read_bytes_per_s = bench::read_ceiling(machine_threads()).gb_per_s * 1e9;
    ThreadPool pool(machine_threads());
    const int64_t m = 512, k = 2048, o = 2048;
    const kernels::Linear linear(random_tensor({o, k}, 1));
    const Tensor x = random_tensor({m, k}, 2);
    Tensor y = Tensor::empty({m, o}, DType::kF32);
    for (int rep = 0; rep < 5; ++rep) {
      const auto t0 = Clock::now();
      linear.forward(x, y, pool);
      out.gemm_flops_per_s =
          std::max(out.gemm_flops_per_s, 2.0 * m * k * o / seconds(t0, Clock::now()));
    }
    return out;
  }();
  return c;
}

// One rank's layer state: caches filled with random rows (the context), the step's inputs.
struct RankSetup {
  std::unique_ptr<attention::LightningIndexer> indexer;
  std::unique_ptr<attention::SfaAttention> sfa;
  attention::AttentionMetadata md;
  Tensor q, kv_c, k_pe, index_q, index_k, index_w;
  int64_t latent_bytes = 0, index_bytes = 0;
};

RankSetup setup_rank(const ParallelGroups& groups, ThreadPool& pool, int n, bool sharded,
                     int64_t batch) {
  RankSetup s;
  const kv::DcpLayout layout(n, kBlock, 1);
  const int64_t blocks_per_req = layout.num_virtual_blocks(kContext);
  const int64_t num_blocks = blocks_per_req * batch;
  const int64_t hl = kHeads / n;
  const auto rank = static_cast<uint32_t>(groups.dcp_rank());
  Tensor latent = random_tensor({num_blocks, kBlock, kLora + kRope}, 100 + rank);
  // The replicated index cache is the same on every rank (same seed); a sharded one is not.
  Tensor index_cache = sharded ? random_tensor({num_blocks, kBlock, kIndexDim}, 200 + rank)
                               : random_tensor({num_blocks, int64_t{kBlock} * n, kIndexDim}, 200);
  s.latent_bytes = static_cast<int64_t>(latent.nbytes());
  s.index_bytes = static_cast<int64_t>(index_cache.nbytes());
  attention::MlaDims dims;
  dims.num_heads = hl;
  dims.kv_lora_rank = kLora;
  dims.qk_nope_head_dim = kNope;
  dims.qk_rope_head_dim = kRope;
  dims.v_head_dim = kV;
  dims.scale = static_cast<float>(1.0 / std::sqrt(double(kNope + kRope)));
  const Tensor kv_b = random_tensor({hl * (kNope + kV), kLora}, 300 + rank);
  const attention::IndexerDims index_dims{kIndexHeads, kIndexDim, kTopk};
  if (n > 1) {
    s.sfa = std::make_unique<attention::SfaDcpAttention>(
        dims, latent, kv_b, pool, groups.dcp(), attention::DcpCommPlan::kAllGatherReduceScatter);
    if (sharded) {
      s.indexer = std::make_unique<attention::ShardedLightningIndexer>(index_dims, index_cache,
                                                                       pool, groups.dcp());
    } else {
      s.indexer = std::make_unique<attention::LightningIndexer>(index_dims, index_cache, pool);
    }
  } else {
    s.sfa = std::make_unique<attention::SfaAttention>(dims, latent, kv_b, pool);
    s.indexer = std::make_unique<attention::LightningIndexer>(index_dims, index_cache, pool);
  }
  // A decode batch: request i holds blocks [i·blocks_per_req, (i+1)·blocks_per_req).
  std::vector<attention::ScheduledRequest> requests;
  for (int64_t i = 0; i < batch; ++i) {
    attention::ScheduledRequest r;
    r.num_computed = kContext - 1;
    r.num_scheduled = 1;
    for (int64_t b = 0; b < blocks_per_req; ++b)
      r.block_table.push_back(static_cast<int32_t>(i * blocks_per_req + b));
    requests.push_back(std::move(r));
  }
  if (n > 1) {
    s.md = attention::DcpMetadataBuilder(layout, groups.dcp_rank()).build(requests);
  } else {
    s.md = attention::AttentionMetadataBuilder(kBlock).build(requests);
  }
  s.q = random_tensor({batch, hl, kNope + kRope}, 400 + rank);
  s.kv_c = random_tensor({batch, kLora}, 500);
  s.k_pe = random_tensor({batch, kRope}, 600);
  s.index_q = random_tensor({batch, kIndexHeads, kIndexDim}, 700);
  s.index_k = random_tensor({batch, kIndexDim}, 800);
  s.index_w = random_tensor({batch, kIndexHeads}, 900);
  return s;
}

void BM_SfaDecodeStep(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool sharded = state.range(1) != 0;
  const int64_t batch = state.range(2);
  const Ceilings& ceil = ceilings();
  double step_s = 0, indexer_s = 0;
  int64_t latent_bytes = 0, index_bytes = 0;
  const int64_t iterations = state.max_iterations;
  run_inprocess_ranks(n, [&](Communicator& world) {
    ParallelGroups groups(world, n, n);
    const int threads = std::max(1, machine_threads() / n);
    omp_set_num_threads(threads);  // this rank thread's oneDNN team
    ThreadPool pool(threads);
    RankSetup s = setup_rank(groups, pool, n, sharded, batch);
    Tensor out = Tensor::empty({batch, kHeads / n, kV}, DType::kF32);
    const auto step = [&](double* index_time) {
      world.barrier();
      const auto t0 = Clock::now();
      const Tensor selected = s.indexer->select(s.md, s.index_q, s.index_k, s.index_w);
      const auto t1 = Clock::now();
      s.sfa->forward(s.md, s.q, s.kv_c, s.k_pe, selected, out);
      world.barrier();
      *index_time = seconds(t0, t1);
      return seconds(t0, Clock::now());
    };
    double index_time = 0;
    step(&index_time);  // warm-up
    if (world.rank() == 0) {
      latent_bytes = s.latent_bytes;
      index_bytes = s.index_bytes;
      for (auto _ : state) {
        const double t = step(&index_time);
        state.SetIterationTime(t);
        step_s += t;
        indexer_s += index_time;
      }
    } else {
      for (int64_t i = 0; i < iterations; ++i) step(&index_time);
    }
  });
  // Keys scored per step by all ranks together: N·context (replicated) or context (sharded).
  const double keys = static_cast<double>(batch) * kContext * (sharded ? 1 : n);
  const double steps = static_cast<double>(iterations);
  const double flops = keys * 2.0 * kIndexHeads * kIndexDim;
  const double bytes = keys * kIndexDim * 4.0;
  state.counters["indexer_share"] = indexer_s / step_s;
  state.counters["latent_MiB"] = static_cast<double>(latent_bytes) / (1 << 20);
  state.counters["index_MiB"] = static_cast<double>(index_bytes) / (1 << 20);
  state.counters["idx_GFLOP_s"] = flops * steps / indexer_s / 1e9;
  state.counters["idx_gemm_frac"] = flops * steps / indexer_s / ceil.gemm_flops_per_s;
  state.counters["idx_read_frac"] = bytes * steps / indexer_s / ceil.read_bytes_per_s;
  state.counters["gemm_GFLOP_s"] = ceil.gemm_flops_per_s / 1e9;
  state.counters["read_GB_s"] = ceil.read_bytes_per_s / 1e9;
  state.SetLabel(n == 1 ? "N=1" : (sharded ? "sharded indexer" : "replicated indexer"));
}

// Args: N (= T), sharded indexer (0/1), decode batch.
BENCHMARK(BM_SfaDecodeStep)
    ->ArgNames({"N", "sharded", "batch"})
    ->Args({1, 0, 1})
    ->Args({2, 0, 1})
    ->Args({2, 1, 1})
    ->Args({4, 0, 1})
    ->Args({4, 1, 1})
    ->Args({1, 0, 4})
    ->Args({2, 0, 4})
    ->Args({2, 1, 4})
    ->Args({4, 0, 4})
    ->Args({4, 1, 4})
    ->Iterations(5)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ctxpar

BENCHMARK_MAIN();
