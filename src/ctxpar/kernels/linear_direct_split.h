// Internal to the linear kernels: how ctxpar's own (non-oneDNN) matmul kernels split their
// work. Output rows are spread over a rank's pool; within a row range, tokens go in chunks
// small enough that a chunk of x stays in L2 while the range's weight rows stream past once.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>

#include "ctxpar/core/thread_pool.h"

namespace ctxpar::kernels::detail {

// Tokens per chunk: 32 f32 rows of a 4096-wide x are 512 KiB.
constexpr int64_t kDirectTokenChunk = 32;
// Output rows per pool task: a multiple of the kernels' 4-row register blocks.
constexpr int64_t kDirectRowGrain = 64;

// Calls fn(token_begin, token_count, row_begin, row_count) over blocks covering
// [0, tokens) × [0, rows): row ranges on the pool's threads when pool is non-null and has more
// than one, else everything on the calling thread.
inline void for_direct_blocks(
    ThreadPool* pool, int64_t tokens, int64_t rows,
    const std::function<void(int64_t t0, int64_t nt, int64_t r0, int64_t nr)>& fn) {
  auto row_range = [&](int64_t begin, int64_t end) {
    for (int64_t t0 = 0; t0 < tokens; t0 += kDirectTokenChunk) {
      fn(t0, std::min(kDirectTokenChunk, tokens - t0), begin, end - begin);
    }
  };
  if (pool == nullptr || pool->num_threads() <= 1 || rows <= kDirectRowGrain) {
    row_range(0, rows);
    return;
  }
  pool->parallel_for(rows, kDirectRowGrain,
                     [&](int64_t begin, int64_t end, int) { row_range(begin, end); });
}

}  // namespace ctxpar::kernels::detail
