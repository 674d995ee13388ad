// KV cache specs: what one attention layer stores per token on one rank, and how many blocks
// a per-rank memory budget holds for a model's layers (DESIGN.md §2).
//
// A block id names a virtual block of B·N positions. A DCP-sharded cache (GQA, MLA) stores B
// of them per rank per block id; a replicated cache (the sparse-attention indexer keys,
// written by every rank for every token) stores all B·N. Every rank's pool has the same
// number of blocks.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ctxpar/core/dtype.h"
#include "ctxpar/kv/dcp_layout.h"

namespace ctxpar::kv {

enum class KvCacheKind : uint8_t {
  kGqa,      // K and V per KV head
  kMla,      // latent c_kv ‖ roped k_pe, one "head" replicated across TP
  kIndexer,  // one index key per token, replicated on every rank of the group
};
std::string_view kv_cache_kind_name(KvCacheKind kind);  // "gqa", "mla", "indexer"

// One layer's cache on one rank. A token row is [components, heads_per_rank, head_dim] of
// dtype.
struct KvCacheSpec {
  KvCacheKind kind;
  DType dtype;
  int components;       // 2 (K and V) for GQA, 1 otherwise
  int heads_per_rank;   // KV heads this rank stores (GQA); 1 otherwise
  int head_dim;         // elements per head: head_dim, kv_lora_rank + qk_rope_head_dim, idx dim
  bool sharded_by_dcp;  // true: a token lives on one rank of the group; false: on every rank

  int64_t bytes_per_token() const {
    return int64_t{components} * heads_per_rank * head_dim *
           static_cast<int64_t>(dtype_size(dtype));
  }
  // Cache rows per block id on one rank: B when sharded, B·N when replicated.
  int64_t rows_per_block(const DcpLayout& layout) const {
    return sharded_by_dcp ? layout.block_size() : layout.tokens_per_virtual_block();
  }
  int64_t bytes_per_block(const DcpLayout& layout) const {
    return rows_per_block(layout) * bytes_per_token();
  }
  std::string describe() const;  // e.g. "gqa bfloat16 [2, 1, 128] 512 B/token, DCP-sharded"
};

// GQA / MHA layer under tensor parallel size tp_size. Each rank stores
// max(1, num_kv_heads / tp_size) KV heads: with more ranks than KV heads the heads are
// replicated (DCP then shards the sequence among ranks that hold the same head). Throws
// unless num_kv_heads and tp_size are >= 1 and one divides the other, and head_dim >= 1.
KvCacheSpec gqa_kv_cache_spec(int num_kv_heads, int head_dim, int tp_size, DType dtype);

// MLA layer: kv_lora_rank + qk_rope_head_dim elements per token, the same on every TP rank.
KvCacheSpec mla_kv_cache_spec(int kv_lora_rank, int qk_rope_head_dim, DType dtype);

// Lightning-indexer key cache: index_head_dim elements per token on every rank (not sharded),
// of the model's KV cache dtype, except that an e4m3 cache (--kv-cache-dtype fp8) keeps its
// index keys in bf16: the indexer kernels read f32 or bf16 keys.
KvCacheSpec indexer_kv_cache_spec(int index_head_dim, DType dtype);

// How much KV one rank's budget holds for a model whose layers have the given caches (one
// spec per cache: a sparse-attention layer contributes an MLA spec and an indexer spec).
struct KvCapacity {
  int64_t bytes_per_block;    // one block id on one rank, summed over all layer specs
  int32_t num_blocks;         // per rank (the same on every rank); may be 0
  int64_t kv_bytes_per_rank;  // num_blocks·bytes_per_block
  int64_t token_capacity;     // num_blocks·B·N: tokens the DCP group can hold
  // Tokens the same budget would hold with N = 1, for reporting what DCP saves.
  int64_t token_capacity_without_dcp;
};

// Throws if the budget is negative, layer_specs is empty, or the block count exceeds int32.
KvCapacity plan_kv_capacity(int64_t memory_budget_bytes_per_rank, const DcpLayout& layout,
                            std::span<const KvCacheSpec> layer_specs);

}  // namespace ctxpar::kv
