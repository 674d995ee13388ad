// Decode attention against ceilings measured in the same run (DESIGN.md §7):
// - read bandwidth: bench/support/read_bandwidth.h (pinned vector read loop over >= 1 GiB of
//   huge pages, best of 8 passes), 1 and 2 threads;
// - GEMM rate: oneDNN matmul 2048³ (bf16 in, f32 out; and f32 for reference), 1 and 2 threads.
// GQA decode (1 token, 32 q heads over 8 KV heads, d 128 and 64, 32768 keys, bf16 cache, B 16,
// shuffled block table, or consecutive blocks with shuffled:0; calls walk enough layers'
// caches to exceed the LLC) is memory bound:
// reported as GB/s of KV read and the fraction of the read bandwidth (resident:1, the same on
// a cache resident in L2 and L3: the kernel's arithmetic rate), and as keys per second, which
// compares kv:16 (bf16) with kv:8 (e4m3, --kv-cache-dtype fp8). On the AMX Xeon VM, d 128:
// e4m3 3.77-3.78 Mkeys/s against bf16's 2.98-3.00 with 1 thread, 7.24 against 5.67-5.80 with
// 2 (1.25x); from L2 4.6-4.75 against 4.96-5.16: its wider conversion (two shifts, a mask and
// vcvtph2ps per 32 values against bf16's shift and mask) makes it compute bound.
// MLA decode (1 token, 16 heads, 576/512, 32768 keys, bf16 cache) is compute bound: reported as
// GFLOP/s (2·H·keys·(576 + 512)) and the fraction of the GEMM rate.
//
// GqaPagedRead and MlaPagedRead read the same caches with no arithmetic: the fraction each
// paged layout allows a reader that requests the next tile as the kernels do (ahead:0), or
// 512 bytes ahead in each span (ahead:512).
//
// Prefill attention (causal, 2048 tokens, 32 q / 8 KV heads, d 64 and 128; k/v f32, or bf16 as
// a bf16 cache's prefill passes them) is compute bound: GFLOP/s against the f32 GEMM rate.
//
// Every rate is reported from wall time, and for one thread also from the thread's CPU time
// (suffix _cpu): on a shared machine the CPU-time figures show what the code does while it
// runs, the wall-time ones include time other processes took.
//
// Run: build-*/bench/kernels_attention/kernels_attention_bench
//      (the ceilings are measured on first use when their own benchmarks are filtered out).
#include <benchmark/benchmark.h>
#include <omp.h>

#include <unistd.h>
#include <algorithm>
#include <cstdint>
#include <map>
#include <numeric>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/error.h"
#include "ctxpar/core/fp8.h"
#include "ctxpar/core/half.h"
#include "ctxpar/core/tensor.h"
#include "ctxpar/core/thread_pool.h"
#include "ctxpar/kernels/attention.h"
#include "ctxpar/kernels/attention_kernel.h"  // kKeyTile
#include "read_bandwidth.h"
#include "read_ceiling_benchmark.h"  // the ceiling as its own rows
#include "timing.h"

namespace ctxpar::kernels {
namespace {

using bench::Rates;
using bench::timed;

// ---------------------------------------------------------------------------------------
// oneDNN matmul rate.

struct MatmulResult {
  Rates gflops;  // GFLOP/s
  std::string impl;
};

MatmulResult matmul_pass(dnnl::memory::data_type dt, int threads, int reps) {
  using namespace dnnl;
  constexpr int64_t n = 2048;
  omp_set_num_threads(threads);
  engine eng(engine::kind::cpu, 0);
  stream strm(eng);
  const memory::desc a_md({n, n}, dt, memory::format_tag::ab);
  const memory::desc b_md({n, n}, dt, memory::format_tag::ab);
  const memory::desc c_md({n, n}, memory::data_type::f32, memory::format_tag::ab);
  matmul::primitive_desc pd;
  try {
    pd = matmul::primitive_desc(matmul::desc(a_md, b_md, c_md), eng);
  } catch (const dnnl::error&) {
    // oneDNN 2.6 implements bf16 matmul only from avx512_core up.
    return {Rates{}, "no oneDNN implementation on this CPU"};
  }
  const matmul prim(pd);
  memory a(a_md, eng), b(b_md, eng), c(c_md, eng);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  for (memory* m : {&a, &b}) {
    if (dt == memory::data_type::bf16) {
      auto* p = static_cast<uint16_t*>(m->get_data_handle());
      for (int64_t i = 0; i < n * n; ++i) p[i] = bf16::from_f32(u(rng));
    } else {
      auto* p = static_cast<float*>(m->get_data_handle());
      for (int64_t i = 0; i < n * n; ++i) p[i] = u(rng);
    }
  }
  const std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}};
  prim.execute(strm, args);  // warm-up (JIT, page faults)
  strm.wait();
  Rates rates;
  for (int r = 0; r < reps; ++r) {
    rates.add(2.0 * n * n * n / 1e9, timed([&] {
                prim.execute(strm, args);
                strm.wait();
              }));
  }
  return {rates, pd.impl_info_str()};
}

std::map<std::pair<int, int>, MatmulResult>& matmul_cache() {
  static std::map<std::pair<int, int>, MatmulResult> m;
  return m;
}

MatmulResult matmul_ceiling(dnnl::memory::data_type dt, int threads) {
  const auto key = std::make_pair(static_cast<int>(dt), threads);
  auto& cache = matmul_cache();
  if (!cache.count(key)) cache[key] = matmul_pass(dt, threads, 2);
  return cache[key];
}

void BM_OnednnMatmul2048(benchmark::State& state) {
  const auto dt =
      state.range(0) == 16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
  const int threads = static_cast<int>(state.range(1));
  MatmulResult r;
  for (auto _ : state) r = matmul_pass(dt, threads, 3);
  if (r.gflops.wall == 0) {
    state.SkipWithError(("oneDNN matmul: " + r.impl).c_str());
    return;
  }
  auto& cache = matmul_cache();
  const auto key = std::make_pair(static_cast<int>(dt), threads);
  if (!cache.count(key) || cache[key].gflops.wall < r.gflops.wall) cache[key] = r;
  state.counters["GFLOP/s"] = r.gflops.wall;
  if (threads == 1) state.counters["GFLOP/s_cpu"] = r.gflops.cpu;
  state.SetLabel(std::string(state.range(0) == 16 ? "bf16 " : "f32 ") + r.impl);
}
BENCHMARK(BM_OnednnMatmul2048)
    ->ArgNames({"bits", "threads"})
    ->Args({16, 1})
    ->Args({16, 2})
    ->Args({32, 1})
    ->Args({32, 2})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// ---------------------------------------------------------------------------------------
// Decode attention.

// bf16 paged caches of one request holding `keys` keys, as `layers` layers share one block
// pool: layer l's block table names its own shuffled blocks. Successive calls walk the layers,
// so the KV bytes they read add up to much more than the last-level cache (as in a model,
// where 16 or more layers' caches are read per step) and come from DRAM.
struct PagedDecode {
  Tensor k_cache, v_cache, latent, token_req, key_lens, q, out, lse;
  std::vector<Tensor> block_tables;  // one [1, blocks] per layer
};

// Uniform values in [-2, 2) from a xorshift generator, rounded to bf16 or e4m3: caches of a
// GiB and more fill in a second (the values only have to be ordinary finite numbers).
Tensor random_cache(const Shape& shape, DType dtype, std::mt19937& rng) {
  Tensor t = Tensor::empty(shape, dtype);
  uint64_t x = rng() | 1;
  auto* p16 = static_cast<uint16_t*>(t.raw());
  auto* p8 = static_cast<uint8_t*>(t.raw());
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const float v = static_cast<float>(x >> 40) * (4.0f / 16777216.0f) - 2.0f;
    if (dtype == DType::kF8E4M3) {
      p8[i] = fp8_e4m3::from_f32(v);
    } else {
      p16[i] = bf16::from_f32(v);
    }
  }
  return t;
}
Tensor random_bf16(const Shape& shape, std::mt19937& rng) {
  return random_cache(shape, DType::kBF16, rng);
}

Tensor random_f32(const Shape& shape, std::mt19937& rng) {
  Tensor t = Tensor::empty(shape, DType::kF32);
  std::normal_distribution<float> d;
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

// shuffled: the blocks of all layers in random order (a pool fragmented by many requests);
// otherwise each layer's blocks are consecutive (what a fresh pool hands a request).
void fill_tables(PagedDecode& p, int64_t keys, int64_t block, int64_t layers, std::mt19937& rng,
                 bool shuffled = true) {
  const int64_t used = (keys + block - 1) / block;
  std::vector<int32_t> ids(static_cast<size_t>(used * layers));
  std::iota(ids.begin(), ids.end(), 0);
  if (shuffled) std::shuffle(ids.begin(), ids.end(), rng);
  for (int64_t l = 0; l < layers; ++l) {
    Tensor t = Tensor::empty({1, used}, DType::kI32);
    std::copy(ids.begin() + l * used, ids.begin() + (l + 1) * used, t.data<int32_t>());
    p.block_tables.push_back(std::move(t));
  }
  p.token_req = Tensor::zeros({1}, DType::kI32);
  p.key_lens = Tensor::empty({1}, DType::kI32);
  p.key_lens.data<int32_t>()[0] = static_cast<int32_t>(keys);
}

constexpr int64_t kKeys = 32768;

// GQA: 32 q heads over 8 KV heads, d = 128 (Llama-3-8B) or 64 (Llama-3.2-1B, the
// bench/compare model), B = 16. Arg "resident" 1: the same 32768 keys, but the block table
// walks 1 MiB of blocks over and over (256 keys at d 128), so the cache is read from L2 and
// L3: the kernel's own rate with DRAM out of the way, to tell a compute limit from a
// memory-access one (DRAM rate / resident rate near 1: the arithmetic is the limit). A call
// over only 256 keys would count its setup: 17 GB/s where the 32768-key pass runs at 21.
constexpr int64_t kResidentBytes = int64_t{1} << 20;
constexpr int64_t kGqaKvHeads = 8;
// Bytes of one layer's K and V for `keys` keys of head dim d, elem_bytes each (bf16: 2).
constexpr int64_t gqa_layer_bytes(int64_t keys, int64_t d, int64_t elem_bytes = 2) {
  return 2 * keys * kGqaKvHeads * d * elem_bytes;
}
// A decode bench's caches (from DRAM or cache-resident) and the keys of its one request.
struct DecodeCase {
  PagedDecode p;
  int64_t keys;
};
DecodeCase make_gqa_case(int64_t keys, bool resident, int64_t d, bool shuffled, DType dtype) {
  constexpr int64_t kBlock = 16, kHkv = kGqaKvHeads, kHq = 32;
  std::mt19937 rng(7);
  DecodeCase c;
  c.keys = keys;
  const auto elem = static_cast<int64_t>(dtype_size(dtype));
  const int64_t layers = resident ? 1 : bench::copies_beyond_llc(gqa_layer_bytes(keys, d, elem));
  const int64_t blocks =
      resident ? kResidentBytes / gqa_layer_bytes(kBlock, d, elem) : keys / kBlock * layers;
  c.p.k_cache = random_cache({blocks, kBlock, kHkv, d}, dtype, rng);
  c.p.v_cache = random_cache({blocks, kBlock, kHkv, d}, dtype, rng);
  fill_tables(c.p, keys, kBlock, layers, rng, shuffled);
  if (resident) {  // the table's ids, a shuffle of all keys' blocks, folded onto the few
    Tensor& table = c.p.block_tables.front();
    for (int64_t i = 0; i < table.numel(); ++i) table.data<int32_t>()[i] %= blocks;
  }
  c.p.q = random_f32({1, kHq, d}, rng);
  c.p.out = Tensor::empty({1, kHq, d}, DType::kF32);
  c.p.lse = Tensor::empty({1, kHq}, DType::kF32);
  return c;
}

// Built once per (d, resident, shuffled, dtype), shared by the GQA benchmarks.
const DecodeCase& gqa_case(int64_t d, bool resident, bool shuffled, DType dtype = DType::kBF16) {
  static std::map<std::tuple<int64_t, bool, bool, DType>, DecodeCase> cases;
  const auto key = std::make_tuple(d, resident, shuffled, dtype);
  auto it = cases.find(key);
  if (it == cases.end()) {
    it = cases.emplace(key, make_gqa_case(kKeys, resident, d, shuffled, dtype)).first;
  }
  return it->second;
}

void BM_GqaDecode(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const bool resident = state.range(1) != 0;
  const int64_t d = state.range(2);
  const bool shuffled = state.range(3) != 0;
  const DType dtype = state.range(4) == 8 ? DType::kF8E4M3 : DType::kBF16;
  const DecodeCase& c = gqa_case(d, resident, shuffled, dtype);
  const PagedDecode& p = c.p;
  const double layer_bytes =
      static_cast<double>(gqa_layer_bytes(c.keys, d, static_cast<int64_t>(dtype_size(dtype))));
  const double ceiling = bench::read_ceiling(threads).gb_per_s;
  ThreadPool pool(threads);
  const PagedKvView kv{p.k_cache, p.v_cache};
  Tensor out = p.out, lse = p.lse;
  Rates r;
  size_t layer = 0;
  for (auto _ : state) {
    const Tensor& table = p.block_tables[layer++ % p.block_tables.size()];
    r.add(layer_bytes / 1e9, timed([&] {
            paged_attention(p.q, kv, table, p.token_req, p.key_lens, 0.088f, out, lse, pool);
          }));
  }
  state.counters["KV_GB/s"] = r.wall;
  // Keys (all 8 KV heads) per second: what compares the two cache dtypes.
  state.counters["Mkeys/s"] = r.wall * 1e3 * static_cast<double>(c.keys) / layer_bytes;
  state.counters["read_GB/s"] = ceiling;
  state.counters["frac_of_read_bw"] = r.wall / ceiling;
  if (threads == 1) {
    state.counters["KV_GB/s_cpu"] = r.cpu;
    state.counters["frac_cpu"] = r.cpu / ceiling;
  }
  state.SetLabel(std::string(dtype_name(dtype)) + " isa " + std::string(isa_name(active_isa())));
}
// kv 16: a bf16 cache; kv 8: e4m3 (--kv-cache-dtype fp8), half the bytes per key.
BENCHMARK(BM_GqaDecode)
    ->ArgNames({"threads", "resident", "d", "shuffled", "kv"})
    ->Args({1, 0, 128, 1, 16})
    ->Args({2, 0, 128, 1, 16})
    ->Args({1, 0, 128, 0, 16})
    ->Args({2, 0, 128, 0, 16})
    ->Args({1, 1, 128, 1, 16})
    ->Args({1, 0, 64, 1, 16})
    ->Args({2, 0, 64, 1, 16})
    ->Args({1, 1, 64, 1, 16})
    ->Args({1, 0, 128, 1, 8})
    ->Args({2, 0, 128, 1, 8})
    ->Args({1, 1, 128, 1, 8})
    ->Unit(benchmark::kMillisecond);

// The paged reads: the decode caches read with no arithmetic, the way the kernels walk them.
using Chunk = uint64_t __attribute__((vector_size(64)));

// Reads n spans of span_bytes, 256 bytes of each in turn, and returns a sum of what it read.
// Meanwhile it requests, with ahead 0, the bytes at the same offsets of `next` (the kernels'
// TilePrefetch), else the bytes `ahead` further on in the same span, then in next[x].
uint64_t read_spans(const char* const* spans, const char* const* next, int n, int64_t span_bytes,
                    int64_t ahead) {
  Chunk acc{};
  for (int64_t off = 0; off < span_bytes; off += 256) {
    for (int x = 0; x < n; ++x) {
      const int64_t to = off + ahead;
      const char* req = ahead == 0        ? next[x] + off
                        : to < span_bytes ? spans[x] + to
                                          : next[x] + to - span_bytes;
      for (int64_t line = 0; line < 256; line += 64) __builtin_prefetch(req + line);
      const auto* c = reinterpret_cast<const Chunk*>(spans[x] + off);
      acc += c[0] + c[1] + c[2] + c[3];
    }
  }
  uint64_t sum = 0;
  for (int i = 0; i < 8; ++i) sum += acc[i];
  return sum;
}

// A paged cache as the decode kernels walk it: per tile of tile_blocks blocks, each base's
// block (block_bytes from base + id · block_bytes) cut into `lanes` spans.
struct PagedLayout {
  std::vector<const char*> bases;  // one cache, or K and V
  int64_t block_bytes = 0;
  int64_t tile_blocks = 1;
  int64_t lanes = 1;
};

// Reads the request's blocks (one layer's table per call, layers in turn) with no arithmetic:
// each thread its share of the blocks, tile by tile, the tile's spans in turn 256 bytes at a
// time while it requests what read_spans does with `ahead` (0: the next tile's bytes at the
// same offsets, as TilePrefetch).
void run_paged_read(benchmark::State& state, int threads, const PagedLayout& layout,
                    const std::vector<Tensor>& tables, double layer_bytes, int64_t ahead) {
  constexpr int kMaxSpans = 16;
  CTXPAR_CHECK(!layout.bases.empty() && layout.block_bytes > 0 && layout.tile_blocks >= 1 &&
                   layout.lanes >= 1,
               "paged layout of {} bases, {}-byte blocks, {} blocks per tile, {} lanes: each "
               "must be at least 1",
               layout.bases.size(), layout.block_bytes, layout.tile_blocks, layout.lanes);
  const int spans_per_tile =
      static_cast<int>(layout.bases.size() * layout.tile_blocks * layout.lanes);
  CTXPAR_CHECK(spans_per_tile <= kMaxSpans, "{} spans per tile; at most {}", spans_per_tile,
               kMaxSpans);
  CTXPAR_CHECK(layout.block_bytes % (layout.lanes * 256) == 0,
               "a {}-byte block does not cut into {} lanes of whole 256-byte chunks",
               layout.block_bytes, layout.lanes);
  const int64_t lane_bytes = layout.block_bytes / layout.lanes;
  CTXPAR_CHECK(ahead >= 0 && ahead % 256 == 0 && ahead < lane_bytes,
               "requests {} bytes ahead; expected a multiple of 256 in [0, {})", ahead, lane_bytes);
  const int64_t blocks = tables.front().size(1);
  CTXPAR_CHECK(blocks % (threads * layout.tile_blocks) == 0,
               "{} blocks do not split into {}-block tiles", blocks, threads * layout.tile_blocks);
  const double ceiling = bench::read_ceiling(threads).gb_per_s;
  ThreadPool pool(threads);
  std::vector<uint64_t> sums(static_cast<size_t>(threads));
  Rates r;
  size_t layer = 0;
  for (auto _ : state) {
    const int32_t* ids = tables[layer++ % tables.size()].data<int32_t>();
    r.add(layer_bytes / 1e9, timed([&] {
            pool.run(threads, [&](int64_t t, int) {
              const int64_t b0 = blocks * t / threads, b1 = blocks * (t + 1) / threads;
              // Per base, the tile's blocks, each in its lanes; past the share's end, its last
              // block.
              const char* spans[2][kMaxSpans];
              const auto tile = [&](int64_t tb, const char** out) {
                int x = 0;
                for (const char* base : layout.bases) {
                  for (int64_t b = 0; b < layout.tile_blocks; ++b) {
                    const char* block = base + ids[std::min(tb + b, b1 - 1)] * layout.block_bytes;
                    for (int64_t lane = 0; lane < layout.lanes; ++lane)
                      out[x++] = block + lane * lane_bytes;
                  }
                }
              };
              tile(b0, spans[0]);
              uint64_t acc = 0;
              int cur = 0;
              for (int64_t tb = b0; tb < b1; tb += layout.tile_blocks) {
                tile(tb + layout.tile_blocks, spans[cur ^ 1]);
                acc += read_spans(spans[cur], spans[cur ^ 1], spans_per_tile, lane_bytes, ahead);
                cur ^= 1;
              }
              sums[static_cast<size_t>(t)] = acc;
            });
          }));
    benchmark::DoNotOptimize(sums.data());
  }
  state.counters["KV_GB/s"] = r.wall;
  state.counters["read_GB/s"] = ceiling;
  state.counters["frac_of_read_bw"] = r.wall / ceiling;
  state.SetLabel(std::to_string(spans_per_tile) + " spans of " + std::to_string(lane_bytes / 1024) +
                 " KiB per tile, " +
                 (ahead == 0 ? std::string("the next tile")
                             : std::to_string(ahead) + " B ahead in each span") +
                 " requested, baseline-ISA loop");
}

// The caches of BM_GqaDecode (shuffled table, d 128) read with no arithmetic: what the paged
// layout lets a reader take from DRAM, beside what the kernel takes. Each thread reads its
// share of the request's blocks as the kernel does (run_paged_read): per 64-key tile, the K and V
// spans of its four blocks (eight 32 KiB spans) in turn, 256 bytes at a time, requesting (ahead:0)
// the next tile's bytes at the same offsets, as the kernel's TilePrefetch does, or (ahead:512)
// the bytes 512 B further on in each span. On the AMX Xeon VM, five runs, 1 and 2 threads:
// ahead:0 0.74-0.81 of the ceiling (whose two long streams read 1.0), ahead:512 0.82-0.91;
// 2 KiB ahead 0.85-0.88, 64 KiB 0.80, no requests 0.67 (throwaway variants). So this layout
// lets a reader take more than 0.8; the kernel (0.58-0.62) reads a tile's rows column-wise and
// needs the whole tile there first, which requests close ahead do not give it (TilePrefetch).
// A plain loop with FMA work per 256 bytes that alone runs at 1.1x the DRAM rate read this
// layout at 0.69 (throwaway test): one core here overlaps its arithmetic with its reads only in
// part.
void BM_GqaPagedRead(benchmark::State& state) {
  constexpr int64_t d = 128;
  const DecodeCase& c = gqa_case(d, false, true);
  const PagedDecode& p = c.p;
  // A block holds 16 keys of every KV head: a tile is four blocks of K and four of V.
  const PagedLayout layout{
      {static_cast<const char*>(p.k_cache.raw()), static_cast<const char*>(p.v_cache.raw())},
      p.k_cache.stride(0) * static_cast<int64_t>(p.k_cache.element_size()),
      detail::kKeyTile / p.k_cache.size(1),
      1};
  run_paged_read(state, static_cast<int>(state.range(0)), layout, p.block_tables,
                 static_cast<double>(gqa_layer_bytes(c.keys, d)), state.range(1));
}
BENCHMARK(BM_GqaPagedRead)
    ->ArgNames({"threads", "ahead"})
    ->ArgsProduct({{1, 2}, {0, 512}})
    ->Unit(benchmark::kMillisecond);

// MLA: 16 heads (8 with heads:8, a 16-head model at TP 2), rows of 576 (512 latent + 64
// rope), values = the 512 latent dims, B = 64.
// At 2·16·(576 + 512) FLOP per 1152-byte row (30 FLOP per byte) this is compute bound on a
// CPU core: reported as GFLOP/s against the GEMM rate, and as KV GB/s against the read
// ceiling. Arg "resident" 1: one layer of 1024 keys (1.1 MiB) read again and again from L2,
// as for GQA.
constexpr int64_t kMlaBlock = 64, kMlaLora = 512, kMlaWidth = 576;
constexpr int64_t kMlaResidentKeys = 1024;
// Bytes of one layer's latent cache for `keys` keys, elem_bytes each (bf16: 2).
constexpr int64_t mla_layer_bytes(int64_t keys, int64_t elem_bytes = 2) {
  return elem_bytes * keys * kMlaWidth;
}
DecodeCase make_mla_case(int64_t keys, bool resident, int64_t heads, DType dtype) {
  std::mt19937 rng(11);
  DecodeCase c;
  c.keys = keys;
  const auto elem = static_cast<int64_t>(dtype_size(dtype));
  const int64_t layers = resident ? 1 : bench::copies_beyond_llc(mla_layer_bytes(keys, elem));
  c.p.latent = random_cache({keys / kMlaBlock * layers, kMlaBlock, kMlaWidth}, dtype, rng);
  fill_tables(c.p, keys, kMlaBlock, layers, rng);
  c.p.q = random_f32({1, heads, kMlaWidth}, rng);
  c.p.out = Tensor::empty({1, heads, kMlaLora}, DType::kF32);
  c.p.lse = Tensor::empty({1, heads}, DType::kF32);
  return c;
}

// Built once per (resident, heads, dtype), shared by the MLA benchmarks.
DecodeCase& mla_case(bool resident, int64_t heads, DType dtype = DType::kBF16) {
  static std::map<std::tuple<bool, int64_t, DType>, DecodeCase> cases;
  const auto key = std::make_tuple(resident, heads, dtype);
  auto it = cases.find(key);
  if (it == cases.end()) {
    it = cases
             .emplace(key,
                      make_mla_case(resident ? kMlaResidentKeys : kKeys, resident, heads, dtype))
             .first;
  }
  return it->second;
}

void BM_MlaDecode(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const bool resident = state.range(1) != 0;
  const int64_t heads = state.range(2);
  const DType dtype = state.range(3) == 8 ? DType::kF8E4M3 : DType::kBF16;
  DecodeCase& c = mla_case(resident, heads, dtype);
  PagedDecode& p = c.p;
  const double layer_bytes =
      static_cast<double>(mla_layer_bytes(c.keys, static_cast<int64_t>(dtype_size(dtype))));
  const double ceiling = bench::read_ceiling(threads).gb_per_s;
  const MatmulResult bf16_gemm = matmul_ceiling(dnnl::memory::data_type::bf16, threads);
  const MatmulResult f32_gemm = matmul_ceiling(dnnl::memory::data_type::f32, threads);
  ThreadPool pool(threads);
  const double gigaflops = 2.0 * heads * c.keys * (kMlaWidth + kMlaLora) / 1e9;
  Rates r;
  size_t layer = 0;
  for (auto _ : state) {
    const Tensor& table = p.block_tables[layer++ % p.block_tables.size()];
    r.add(gigaflops, timed([&] {
            paged_mla_attention(p.q, p.latent, kMlaLora, table, p.token_req, p.key_lens, 0.072f,
                                p.out, p.lse, pool);
          }));
  }
  const double gbps = r.wall / gigaflops * layer_bytes / 1e9;
  state.counters["GFLOP/s"] = r.wall;
  state.counters["KV_GB/s"] = gbps;
  state.counters["read_GB/s"] = ceiling;
  state.counters["frac_of_read_bw"] = gbps / ceiling;
  // Where oneDNN has no bf16 matmul (AVX2 CPUs) the f32 GEMM rate is the ceiling: bf16 math
  // there runs as f32 FMAs after conversion anyway.
  if (bf16_gemm.gflops.wall > 0) {
    state.counters["bf16_gemm_GFLOP/s"] = bf16_gemm.gflops.wall;
    state.counters["frac_of_bf16_gemm"] = r.wall / bf16_gemm.gflops.wall;
  }
  state.counters["f32_gemm_GFLOP/s"] = f32_gemm.gflops.wall;
  state.counters["frac_of_f32_gemm"] = r.wall / f32_gemm.gflops.wall;
  if (threads == 1) {
    state.counters["GFLOP/s_cpu"] = r.cpu;
    state.counters["frac_f32_gemm_cpu"] = r.cpu / f32_gemm.gflops.cpu;
    if (bf16_gemm.gflops.cpu > 0) {
      state.counters["frac_bf16_gemm_cpu"] = r.cpu / bf16_gemm.gflops.cpu;
    }
  }
  state.SetLabel(std::string(dtype_name(dtype)) + " isa " + std::string(isa_name(active_isa())));
}
// kv 16: a bf16 cache; kv 8: e4m3 (--kv-cache-dtype fp8). GFLOP/s compares the two: on the
// AMX Xeon VM e4m3 runs at 0.89-0.91 of bf16's rate with 1 thread from DRAM, 0.86-0.95 with 2,
// and at the same rate from L2 (0.69-0.73 of bf16's there): widening each tile to bf16 in
// scratch makes it compute bound, so it buys capacity, not speed.
BENCHMARK(BM_MlaDecode)
    ->ArgNames({"threads", "resident", "heads", "kv"})
    ->Args({1, 0, 16, 16})
    ->Args({2, 0, 16, 16})
    ->Args({1, 1, 16, 16})
    ->Args({1, 0, 8, 16})
    ->Args({1, 1, 8, 16})
    ->Args({1, 0, 16, 8})
    ->Args({2, 0, 16, 8})
    ->Args({1, 1, 16, 8})
    ->Unit(benchmark::kMillisecond);

// The cache of BM_MlaDecode (16 heads) read with no arithmetic, as GqaPagedRead reads GQA's:
// a tile is one 64-key block (72 KiB), cut into six 12 KiB lanes as TilePrefetch cuts it. On
// the AMX Xeon VM ahead:0 reads 0.66-0.79 of the ceiling (1 and 2 threads, five runs), where
// the kernel reads 0.52-0.55: it takes 0.75-0.80 of what the layout gives, as GQA's does;
// ahead:512 0.69-0.80, less of a gain than GQA's. Other cuts (a throwaway argument): one lane
// 0.55-0.58, two to twelve 0.61-0.77; one lane requesting 0.5-2 KiB ahead 0.57.
void BM_MlaPagedRead(benchmark::State& state) {
  const DecodeCase& c = mla_case(false, 16);
  const PagedDecode& p = c.p;
  const PagedLayout layout{{static_cast<const char*>(p.latent.raw())},
                           p.latent.stride(0) * static_cast<int64_t>(p.latent.element_size()),
                           detail::kKeyTile / p.latent.size(1),
                           6};
  run_paged_read(state, static_cast<int>(state.range(0)), layout, p.block_tables,
                 static_cast<double>(mla_layer_bytes(c.keys)), state.range(1));
}
BENCHMARK(BM_MlaPagedRead)
    ->ArgNames({"threads", "ahead"})
    ->ArgsProduct({{1, 2}, {0, 512}})
    ->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------
// Prefill attention.

// Causal self-attention of one 2048-token prompt over its own k/v (what a Llama prefill runs
// per layer; kv_bits 16: k/v rounded to bf16, as with a bf16 cache): 32 q heads over 8 KV
// heads, d 64 (Llama-3.2-1B) and 128. Compute bound: GFLOP/s (2·2·Hq·d per query-key pair,
// T(T+1)/2 pairs per head) against the f32 GEMM rate.
void BM_GqaPrefill(benchmark::State& state) {
  constexpr int64_t kTokens = 2048, kHq = 32, kHkv = 8;
  const int64_t d = state.range(0);
  const int threads = static_cast<int>(state.range(1));
  const bool bf16_kv = state.range(2) == 16;
  std::mt19937 rng(5);
  const Tensor q = random_f32({kTokens, kHq, d}, rng);
  const Tensor k =
      bf16_kv ? random_bf16({kTokens, kHkv, d}, rng) : random_f32({kTokens, kHkv, d}, rng);
  const Tensor v =
      bf16_kv ? random_bf16({kTokens, kHkv, d}, rng) : random_f32({kTokens, kHkv, d}, rng);
  Tensor cu = Tensor::empty({2}, DType::kI32);
  cu.data<int32_t>()[0] = 0;
  cu.data<int32_t>()[1] = static_cast<int32_t>(kTokens);
  Tensor out = Tensor::empty({kTokens, kHq, d}, DType::kF32);
  Tensor lse = Tensor::empty({kTokens, kHq}, DType::kF32);
  const MatmulResult f32_gemm = matmul_ceiling(dnnl::memory::data_type::f32, threads);
  ThreadPool pool(threads);
  const double gigaflops = 4.0 * kHq * d * (kTokens * (kTokens + 1) / 2) / 1e9;
  causal_attention(q, k, v, cu, 0.125f, out, lse, pool);  // warm-up
  Rates r;
  for (auto _ : state) {
    r.add(gigaflops, timed([&] { causal_attention(q, k, v, cu, 0.125f, out, lse, pool); }));
  }
  state.counters["GFLOP/s"] = r.wall;
  state.counters["f32_gemm_GFLOP/s"] = f32_gemm.gflops.wall;
  state.counters["frac_of_f32_gemm"] = r.wall / f32_gemm.gflops.wall;
  if (threads == 1) {
    state.counters["GFLOP/s_cpu"] = r.cpu;
    state.counters["frac_f32_gemm_cpu"] = r.cpu / f32_gemm.gflops.cpu;
  }
  state.SetLabel(std::string("isa ") + std::string(isa_name(active_isa())));
}
BENCHMARK(BM_GqaPrefill)
    ->ArgNames({"d", "threads", "kv_bits"})
    ->Args({64, 1, 32})
    ->Args({64, 2, 32})
    ->Args({128, 1, 32})
    ->Args({64, 1, 16})
    ->Args({128, 1, 16})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
}  // namespace ctxpar::kernels

BENCHMARK_MAIN();
