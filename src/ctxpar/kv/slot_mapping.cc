#include "ctxpar/kv/slot_mapping.h"

#include "ctxpar/core/error.h"

namespace ctxpar::kv {
namespace {

void check_batch(std::span<const int64_t> positions, std::span<const int32_t> request_of_token,
                 size_t num_tables, size_t out_size) {
  CTXPAR_CHECK(request_of_token.size() == positions.size(),
               "slot mapping got {} positions but {} request indices; need one per token",
               positions.size(), request_of_token.size());
  CTXPAR_CHECK(out_size == positions.size(),
               "slot mapping output has {} entries for {} tokens; need one per token", out_size,
               positions.size());
  for (size_t t = 0; t < request_of_token.size(); ++t) {
    const int32_t req = request_of_token[t];
    CTXPAR_CHECK(req >= 0 && static_cast<size_t>(req) < num_tables,
                 "token {} belongs to request {}, outside the {} block tables [0, {})", t, req,
                 num_tables, num_tables);
  }
}

// Calls slot_of(position, table) per token after checking the batch is well formed.
template <typename SlotOf>
void fill(std::span<const int64_t> positions, std::span<const int32_t> request_of_token,
          std::span<const std::span<const int32_t>> block_tables, std::span<int64_t> out,
          SlotOf slot_of) {
  check_batch(positions, request_of_token, block_tables.size(), out.size());
  for (size_t t = 0; t < positions.size(); ++t) {
    out[t] = slot_of(positions[t], block_tables[static_cast<size_t>(request_of_token[t])]);
  }
}

}  // namespace

void fill_slot_mapping(const DcpLayout& layout, int rank, std::span<const int64_t> positions,
                       std::span<const int32_t> request_of_token,
                       std::span<const std::span<const int32_t>> block_tables,
                       std::span<int64_t> out) {
  fill(positions, request_of_token, block_tables, out,
       [&](int64_t p, std::span<const int32_t> table) { return layout.slot(p, rank, table); });
}

Tensor slot_mapping(const DcpLayout& layout, int rank, std::span<const int64_t> positions,
                    std::span<const int32_t> request_of_token,
                    std::span<const std::span<const int32_t>> block_tables) {
  Tensor out = Tensor::empty({static_cast<int64_t>(positions.size())}, DType::kI64);
  fill_slot_mapping(layout, rank, positions, request_of_token, block_tables,
                    std::span<int64_t>(out.data<int64_t>(), positions.size()));
  return out;
}

void fill_replicated_slot_mapping(const DcpLayout& layout, std::span<const int64_t> positions,
                                  std::span<const int32_t> request_of_token,
                                  std::span<const std::span<const int32_t>> block_tables,
                                  std::span<int64_t> out) {
  fill(positions, request_of_token, block_tables, out,
       [&](int64_t p, std::span<const int32_t> table) { return layout.replicated_slot(p, table); });
}

Tensor replicated_slot_mapping(const DcpLayout& layout, std::span<const int64_t> positions,
                               std::span<const int32_t> request_of_token,
                               std::span<const std::span<const int32_t>> block_tables) {
  Tensor out = Tensor::empty({static_cast<int64_t>(positions.size())}, DType::kI64);
  fill_replicated_slot_mapping(layout, positions, request_of_token, block_tables,
                               std::span<int64_t>(out.data<int64_t>(), positions.size()));
  return out;
}

}  // namespace ctxpar::kv
