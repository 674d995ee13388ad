// Slot mappings: where each new token of a batch is written in one rank's KV cache.
//
// A batch is a flat list of new tokens; token t has global position positions[t] in request
// request_of_token[t], whose block table is block_tables[request_of_token[t]] (one id per
// virtual block, as BlockTable::ids()). Every table must cover the positions of its tokens.
#pragma once

#include <cstdint>
#include <span>

#include "ctxpar/core/tensor.h"
#include "ctxpar/kv/dcp_layout.h"

namespace ctxpar::kv {

// Sharded caches (GQA / MLA KV): out[t] = layout.slot(positions[t], rank, table), i.e. the
// token's row on `rank`, or -1 where another rank of the group owns it (write nothing).
// positions, request_of_token and out have the same length (may be 0).
void fill_slot_mapping(const DcpLayout& layout, int rank, std::span<const int64_t> positions,
                       std::span<const int32_t> request_of_token,
                       std::span<const std::span<const int32_t>> block_tables,
                       std::span<int64_t> out);
// Same, into a new int64 Tensor [num_tokens].
Tensor slot_mapping(const DcpLayout& layout, int rank, std::span<const int64_t> positions,
                    std::span<const int32_t> request_of_token,
                    std::span<const std::span<const int32_t>> block_tables);

// Replicated caches (every rank writes every token, e.g. the sparse-attention indexer keys):
// out[t] = layout.replicated_slot(positions[t], table), never -1 and the same on every rank.
// Blocks of such a cache hold B·N rows.
void fill_replicated_slot_mapping(const DcpLayout& layout, std::span<const int64_t> positions,
                                  std::span<const int32_t> request_of_token,
                                  std::span<const std::span<const int32_t>> block_tables,
                                  std::span<int64_t> out);
Tensor replicated_slot_mapping(const DcpLayout& layout, std::span<const int64_t> positions,
                               std::span<const int32_t> request_of_token,
                               std::span<const std::span<const int32_t>> block_tables);

}  // namespace ctxpar::kv
