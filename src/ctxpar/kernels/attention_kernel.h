// Internal: one attention job, the unit of work the dispatcher (attention_plan.cc) hands to a
// per-ISA kernel (attention_kernel_{scalar,avx2,avx512,amx}.cc).
//
// A job is `rows` query rows that attend the same keys [key_begin, key_end) of kv_heads
// consecutive KV heads: the query heads of those KV heads for one token, or for several tokens
// that share their keys. Rows are grouped by KV head (rows / kv_heads rows per head).
// It writes, per row, the normalized o over those keys and its natural-log lse (o = 0,
// lse = -inf for a row that saw no key), so a key range split into jobs merges exactly.
#pragma once

#include <cstdint>

#include "ctxpar/core/cpu_features.h"

namespace ctxpar::kernels::detail {

// Rows per job: bounds the per-thread scratch (o accumulators, scores) to stay in L2.
inline constexpr int kMaxJobRows = 64;
// Keys per softmax tile: the scores of a tile are computed, exponentiated, then applied to V.
inline constexpr int kKeyTile = 64;

enum class KvDType : uint8_t { kF32, kBF16, kF8E4M3 };  // kF8E4M3: e4m3 bits (core/fp8.h)

// Where the K and V rows of a job's keys live. Key j has local index
// li = indices ? indices[j] : j. Paged (block_table set): the row is
// base + block_table[li / block_size]·block_stride + (li % block_size)·row_stride;
// contiguous (block_table null): base + li·row_stride. Strides in bytes; bases already point
// at the job's KV head.
struct KeyRows {
  const char* k = nullptr;
  const char* v = nullptr;
  int64_t k_block_stride = 0;
  int64_t v_block_stride = 0;
  int64_t k_row_stride = 0;
  int64_t v_row_stride = 0;
  const int32_t* block_table = nullptr;
  int64_t block_size = 1;
  const int32_t* indices = nullptr;
};

struct AttnJob {
  KvDType dtype = KvDType::kF32;
  int64_t dk = 0;
  int64_t dv = 0;
  bool v_in_k_row = false;  // each V row is the first dv values of its K row (MLA latent)
  KeyRows keys;
  int64_t key_begin = 0;
  int64_t key_end = 0;
  int kv_heads = 1;  // head h's rows are base rows + h·{k,v}_head_stride bytes
  int64_t k_head_stride = 0;
  int64_t v_head_stride = 0;
  int rows = 0;                          // <= kMaxJobRows, a multiple of kv_heads
  const float* const* q = nullptr;       // [rows] → dk f32
  const int64_t* row_key_end = nullptr;  // [rows] or null: row r sees keys < row_key_end[r]
  float scale = 1.0f;                    // applied to q·k
  float* const* out = nullptr;           // [rows] → dv f32, written
  float* const* lse = nullptr;           // [rows] → one f32, written
  // The next tile's rows are requested into L2 (AMD cores) rather than into L1 (Intel's): a
  // choice of speed only, the results are the same bits either way.
  bool prefetch_to_l2 = false;
};

// Per-thread scratch of a job, in floats (the same layout for every ISA).
struct AttnScratchLayout {
  int64_t dk_stride, dv_stride;  // row strides of the q / k-tile and o / v-tile regions
  int64_t q, o, s, m, l, k_tile, v_tile, k_t, wide, total;
};
constexpr AttnScratchLayout attn_scratch_layout(int64_t dk, int64_t dv) {
  AttnScratchLayout x{};
  x.dk_stride = (dk + 15) / 16 * 16;  // 64-byte rows
  x.dv_stride = (dv + 15) / 16 * 16;
  x.q = 0;                                       // [kMaxJobRows, dk] lane order, scaled
  x.o = x.q + kMaxJobRows * x.dk_stride;         // [kMaxJobRows, dv] lane order
  x.s = x.o + kMaxJobRows * x.dv_stride;         // [kMaxJobRows, kKeyTile] scores → p
  x.m = x.s + kMaxJobRows * kKeyTile;            // [kMaxJobRows] running max (base 2)
  x.l = x.m + kMaxJobRows;                       // [kMaxJobRows] running sum
  x.k_tile = x.l + kMaxJobRows;                  // [kKeyTile, dk] f32 copy of bf16 keys
  x.v_tile = x.k_tile + kKeyTile * x.dk_stride;  // [kKeyTile, dv]
  x.k_t = x.v_tile + kKeyTile * x.dv_stride;     // [dk, kKeyTile] a K tile transposed
  x.wide = x.k_t + kKeyTile * x.dk_stride;       // [kKeyTile, dk + dv] bf16: AMX's e4m3 rows
  x.total = x.wide + kKeyTile * (x.dk_stride + x.dv_stride) / 2;
  return x;
}

using AttnJobFn = void (*)(const AttnJob& job, float* scratch);
void run_attention_job_scalar(const AttnJob& job, float* scratch);
void run_attention_job_avx2(const AttnJob& job, float* scratch);
void run_attention_job_avx512(const AttnJob& job, float* scratch);
// As run_attention_job_avx512, a bf16 cache's scores as vdpbf16ps dot products (CPUs with
// AVX-512 BF16; the same scores to f32 rounding) and its P·V as dot products of the weights
// rounded to bf16 (attention_rounds_weights, attention.h).
void run_attention_job_avx512bf16(const AttnJob& job, float* scratch);
// The AVX-512 variant this CPU runs best: the dot-product one where vdpbf16ps is fast
// (bf16_dot_fast, linear_matmul_cache.h), else run_attention_job_avx512.
AttnJobFn avx512_attention_job();
// bf16 and e4m3 caches with 8 to 64 rows per KV head and head dims multiples of 32 on the AMX
// tiles (attention_kernel_amx.cc); other jobs as run_attention_job_avx512.
void run_attention_job_amx(const AttnJob& job, float* scratch);

}  // namespace ctxpar::kernels::detail
