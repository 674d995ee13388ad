// Internal to the linear kernels: how a forward call walks its tokens and output rows. Tokens
// go in chunks (x may first be converted per chunk: rounded to bf16, quantized to int8, so the
// conversion buffer stays bounded however long a prefill is); within a chunk, output rows are
// split over the rank's pool. oneDNN runs single-threaded inside each task
// (linear_matmul_cache.h), so the pool is the rank's one thread runtime.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

#include "ctxpar/core/thread_pool.h"

namespace ctxpar::kernels::detail {

// Tokens per chunk for ctxpar's own int8 kernel: x is re-read per 4 weight rows, and 32 rows
// of a 4096-wide x stay in L2 while the weight rows stream past once per chunk.
constexpr int64_t kDirectTokenChunk = 32;
// Tokens per chunk for oneDNN on converted x (or converted weight tiles): large GEMMs, a
// bounded conversion buffer, a weight tile converted once per 512 tokens.
constexpr int64_t kOneDnnTokenChunk = 512;
// Output rows per pool task at least: whole register blocks of the own kernels and whole
// vector blocks of oneDNN's.
constexpr int64_t kDirectRowGrain = 64;

// Weight rows converted to f32 at a time where oneDNN's sgemm runs on converted weight tiles
// (bf16 without native bf16 GEMM, FP8): 512 where they fit 16 MiB of a pool thread's scratch.
// Wider tiles amortize oneDNN's per-call work over more columns (kernels_linear_bench prefill,
// 1 thread: 128 rows 130 GFLOP/s, 256 135, 512 141, 1024 140); the cap bounds the scratch for
// long rows (in 28672: 146 rows).
inline int64_t f32_tile_rows(int64_t in) {
  constexpr int64_t kTileBytes = int64_t{16} << 20;
  return std::clamp<int64_t>(kTileBytes / (in * static_cast<int64_t>(sizeof(float))), 64, 512);
}

// Rows per task for `rows` output rows on `threads` threads: two contiguous ranges per thread
// (a GEMM wants few large N blocks; two let a thread that another process slowed hand work
// over), a multiple of kDirectRowGrain.
inline int64_t rows_per_task(int64_t rows, int threads) {
  const int64_t per = (rows + 2 * threads - 1) / (2 * threads);
  return std::max<int64_t>(kDirectRowGrain,
                           (per + kDirectRowGrain - 1) / kDirectRowGrain * kDirectRowGrain);
}

// For each chunk of up to `chunk` tokens, in order: prepare(t0, nt) on the calling thread, then
// block(t0, nt, r0, nr) over row ranges covering [0, rows) — on the pool's threads when pool
// is non-null and has more than one, else once on the calling thread.
inline void for_token_chunks(
    ThreadPool* pool, int64_t tokens, int64_t rows, int64_t chunk,
    const std::function<void(int64_t t0, int64_t nt)>& prepare,
    const std::function<void(int64_t t0, int64_t nt, int64_t r0, int64_t nr)>& block) {
  const bool split = pool != nullptr && pool->num_threads() > 1 && rows > kDirectRowGrain;
  const int64_t per = split ? rows_per_task(rows, pool->num_threads()) : rows;
  for (int64_t t0 = 0; t0 < tokens; t0 += chunk) {
    const int64_t nt = std::min(chunk, tokens - t0);
    prepare(t0, nt);
    if (split) {
      pool->run((rows + per - 1) / per, [&](int64_t task, int) {
        const int64_t r0 = task * per;
        block(t0, nt, r0, std::min(rows, r0 + per) - r0);
      });
    } else {
      block(t0, nt, 0, rows);
    }
  }
}

}  // namespace ctxpar::kernels::detail
