// Internal to the linear kernels: how a forward call walks its tokens and output rows when x
// must first be converted (rounded to bf16, quantized to int8). Tokens go in chunks, so the
// per-thread conversion buffer stays bounded however long a prefill is; within a chunk, output
// rows are spread over the rank's pool for ctxpar's own kernels.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

#include "ctxpar/core/thread_pool.h"

namespace ctxpar::kernels::detail {

// Tokens per chunk for ctxpar's own kernels: x is re-read per 4 weight rows, and 32 f32 rows
// of a 4096-wide x (512 KiB) stay in L2 while the weight rows stream past once per chunk.
constexpr int64_t kDirectTokenChunk = 32;
// Tokens per chunk for oneDNN on converted x: large GEMMs, a bounded conversion buffer.
constexpr int64_t kOneDnnTokenChunk = 256;
// Output rows per pool task: a multiple of the kernels' 4-row register blocks.
constexpr int64_t kDirectRowGrain = 64;

// For each chunk of up to `chunk` tokens, in order: prepare(t0, nt) on the calling thread, then
// block(t0, nt, r0, nr) over row ranges covering [0, rows) — on the pool's threads when pool
// is non-null and has more than one, else once on the calling thread.
inline void for_token_chunks(
    ThreadPool* pool, int64_t tokens, int64_t rows, int64_t chunk,
    const std::function<void(int64_t t0, int64_t nt)>& prepare,
    const std::function<void(int64_t t0, int64_t nt, int64_t r0, int64_t nr)>& block) {
  const bool split = pool != nullptr && pool->num_threads() > 1 && rows > kDirectRowGrain;
  for (int64_t t0 = 0; t0 < tokens; t0 += chunk) {
    const int64_t nt = std::min(chunk, tokens - t0);
    prepare(t0, nt);
    if (split) {
      pool->parallel_for(rows, kDirectRowGrain, [&](int64_t begin, int64_t end, int) {
        block(t0, nt, begin, end - begin);
      });
    } else {
      block(t0, nt, 0, rows);
    }
  }
}

}  // namespace ctxpar::kernels::detail
