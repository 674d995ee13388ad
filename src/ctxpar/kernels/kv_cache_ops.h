// Moving rows between activations and a paged KV cache. A cache tensor is
// [num_blocks, B, row...] (f32, bf16 or float8_e4m3fn): the first two dims address a slot
// (slot = block·B + offset), the remaining dims form one contiguous row per slot. Views of a
// wider cache are allowed (e.g. the k_pe part of an MLA latent row), so the row may be a
// strided slice of a longer physical row.
#pragma once

#include <cstdint>
#include <span>

#include "ctxpar/core/tensor.h"

namespace ctxpar::kernels {

// cache[slot(t)] = rows[t] for every token t whose slot is >= 0 (-1: not stored on this rank).
// rows: [tokens, row...] f32 with the same row shape as the cache; slots: [tokens] i64.
// Converts to the cache dtype (bf16 and e4m3 round to nearest even; e4m3 saturates at ±448).
void write_cache_rows(const Tensor& rows, const Tensor& slots, Tensor& cache);

// rows as the cache stores them: a copy rounded to the cache's dtype when that is bf16 (round
// to nearest even, as write_cache_rows), for an e4m3 cache the e4m3 values as bf16 (exact),
// else rows itself. The attention of a step's new tokens
// reads its raw k/v through this, so it sees the values later steps read from the cache, and a
// bf16 cache's prefill runs the bf16 attention kernels (on AMX 2-2.6x the f32 rate,
// kernels_attention_bench GqaPrefill). rows: f32, any shape; cache: f32, bf16 or e4m3.
Tensor at_cache_dtype(const Tensor& rows, const Tensor& cache);

// out[i] = cache row of local index first + i of a request, for i in [0, count):
// block = block_table[li / B], offset li % B. out: [count, row...] f32 (contiguous rows);
// the table must cover first + count - 1.
void read_cache_rows(const Tensor& cache, std::span<const int32_t> block_table, int64_t first,
                     int64_t count, Tensor& out);

}  // namespace ctxpar::kernels
