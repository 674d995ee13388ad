#include "ctxpar/kv/kv_cache_spec.h"

#include <fmt/format.h>

#include <limits>

#include "ctxpar/core/error.h"

namespace ctxpar::kv {

std::string_view kv_cache_kind_name(KvCacheKind kind) {
  switch (kind) {
    case KvCacheKind::kGqa:
      return "gqa";
    case KvCacheKind::kMla:
      return "mla";
    case KvCacheKind::kIndexer:
      return "indexer";
  }
  return "unknown";
}

std::string KvCacheSpec::describe() const {
  return fmt::format("{} {} [{}, {}, {}] {} B/token, {}", kv_cache_kind_name(kind),
                     dtype_name(dtype), components, heads_per_rank, head_dim, bytes_per_token(),
                     sharded_by_dcp ? "DCP-sharded" : "replicated on every rank");
}

KvCacheSpec gqa_kv_cache_spec(int num_kv_heads, int head_dim, int tp_size, DType dtype) {
  CTXPAR_CHECK(num_kv_heads >= 1, "num_kv_heads {} is invalid; it must be >= 1", num_kv_heads);
  CTXPAR_CHECK(head_dim >= 1, "head_dim {} is invalid; it must be >= 1", head_dim);
  CTXPAR_CHECK(tp_size >= 1, "tensor parallel size {} is invalid; it must be >= 1", tp_size);
  CTXPAR_CHECK(num_kv_heads % tp_size == 0 || tp_size % num_kv_heads == 0,
               "num_kv_heads {} and tensor parallel size {} must divide one another (heads are "
               "split evenly, or each head is replicated on tp_size / num_kv_heads ranks)",
               num_kv_heads, tp_size);
  const int heads_per_rank = num_kv_heads >= tp_size ? num_kv_heads / tp_size : 1;
  return {KvCacheKind::kGqa, dtype, 2, heads_per_rank, head_dim, true};
}

KvCacheSpec mla_kv_cache_spec(int kv_lora_rank, int qk_rope_head_dim, DType dtype) {
  CTXPAR_CHECK(kv_lora_rank >= 1, "kv_lora_rank {} is invalid; it must be >= 1", kv_lora_rank);
  CTXPAR_CHECK(qk_rope_head_dim >= 0, "qk_rope_head_dim {} is invalid; it must be >= 0",
               qk_rope_head_dim);
  return {KvCacheKind::kMla, dtype, 1, 1, kv_lora_rank + qk_rope_head_dim, true};
}

KvCacheSpec indexer_kv_cache_spec(int index_head_dim, DType dtype) {
  CTXPAR_CHECK(index_head_dim >= 1, "index_head_dim {} is invalid; it must be >= 1",
               index_head_dim);
  const DType stored = dtype == DType::kF8E4M3 ? DType::kBF16 : dtype;
  return {KvCacheKind::kIndexer, stored, 1, 1, index_head_dim, false};
}

namespace {

int32_t blocks_in_budget(int64_t budget, int64_t bytes_per_block) {
  const int64_t count = budget / bytes_per_block;
  CTXPAR_CHECK_INPUT(
      count <= std::numeric_limits<int32_t>::max(),
      "a KV budget of {} bytes holds {} blocks of {} bytes, more than the {} int32 block "
      "ids can name; use a larger block size",
      budget, count, bytes_per_block, std::numeric_limits<int32_t>::max());
  return static_cast<int32_t>(count);
}

}  // namespace

KvCapacity plan_kv_capacity(int64_t memory_budget_bytes_per_rank, const DcpLayout& layout,
                            std::span<const KvCacheSpec> layer_specs) {
  CTXPAR_CHECK(memory_budget_bytes_per_rank >= 0,
               "KV memory budget {} bytes per rank is negative; it must be >= 0",
               memory_budget_bytes_per_rank);
  CTXPAR_CHECK(!layer_specs.empty(), "cannot size a KV cache for a model with no cache specs");
  const DcpLayout no_dcp(1, layout.block_size(), layout.interleave());
  int64_t bytes_per_block = 0;
  int64_t bytes_per_block_without_dcp = 0;
  for (const KvCacheSpec& spec : layer_specs) {
    bytes_per_block += spec.bytes_per_block(layout);
    bytes_per_block_without_dcp += spec.bytes_per_block(no_dcp);
  }
  CTXPAR_CHECK(bytes_per_block >= 1, "the KV cache specs need {} bytes per block; need >= 1",
               bytes_per_block);

  KvCapacity capacity{};
  capacity.bytes_per_block = bytes_per_block;
  capacity.num_blocks = blocks_in_budget(memory_budget_bytes_per_rank, bytes_per_block);
  capacity.kv_bytes_per_rank = int64_t{capacity.num_blocks} * bytes_per_block;
  capacity.token_capacity = int64_t{capacity.num_blocks} * layout.tokens_per_virtual_block();
  // A report, not an allocation: the N = 1 block count only needs to fit int64.
  capacity.token_capacity_without_dcp =
      memory_budget_bytes_per_rank / bytes_per_block_without_dcp * layout.block_size();
  return capacity;
}

}  // namespace ctxpar::kv
