#include "ctxpar/attention/attention_metadata.h"

#include <algorithm>

#include "ctxpar/core/error.h"

namespace ctxpar::attention {

TokenShard make_token_shard(int64_t num_tokens, int rank, int size) {
  CTXPAR_CHECK(size >= 1 && rank >= 0 && rank < size && num_tokens >= 0,
               "token shard: rank {} of {} ranks over {} tokens (need 0 <= rank < size, tokens "
               ">= 0)",
               rank, size, num_tokens);
  TokenShard s;
  s.rank = rank;
  s.size = size;
  s.num_tokens = num_tokens;
  s.per_rank = std::max<int64_t>(1, (num_tokens + size - 1) / size);
  s.first = std::min(num_tokens, s.per_rank * rank);
  s.last = std::min(num_tokens, s.per_rank * (rank + 1));
  return s;
}

AttentionMetadataBuilder::AttentionMetadataBuilder(int block_size)
    : AttentionMetadataBuilder(kv::DcpLayout(1, block_size, 1), 0) {}

AttentionMetadataBuilder::AttentionMetadataBuilder(const kv::DcpLayout& layout, int rank)
    : layout_(layout), rank_(rank) {
  CTXPAR_CHECK(rank >= 0 && rank < layout.dcp_size(), "DCP rank {} is outside [0, {})", rank,
               layout.dcp_size());
}

void AttentionMetadataBuilder::build_extra(std::span<const ScheduledRequest>,
                                           AttentionMetadata&) const {}

AttentionMetadata AttentionMetadataBuilder::build(
    std::span<const ScheduledRequest> requests) const {
  AttentionMetadata md;
  md.layout = layout_;
  CommonAttentionMetadata& c = md.common;
  c.num_reqs = static_cast<int64_t>(requests.size());

  size_t max_blocks = 0;
  bool decodes_so_far = true;
  for (size_t i = 0; i < requests.size(); ++i) {
    const ScheduledRequest& r = requests[i];
    CTXPAR_CHECK(r.num_scheduled >= 1,
                 "request {} has {} new tokens; every scheduled request "
                 "needs at least 1",
                 i, r.num_scheduled);
    CTXPAR_CHECK(r.num_computed >= 0, "request {} has num_computed {}; it must be >= 0", i,
                 r.num_computed);
    const int64_t seq_len = r.num_computed + r.num_scheduled;
    const int64_t needed = layout_.num_virtual_blocks(seq_len);
    CTXPAR_CHECK(static_cast<int64_t>(r.block_table.size()) >= needed,
                 "request {} has {} tokens and needs {} blocks of {} positions, but its block "
                 "table has {}",
                 i, seq_len, needed, layout_.tokens_per_virtual_block(), r.block_table.size());
    max_blocks = std::max(max_blocks, r.block_table.size());
    c.num_computed.push_back(r.num_computed);
    c.seq_lens.push_back(seq_len);
    c.num_tokens += r.num_scheduled;
    decodes_so_far = decodes_so_far && r.is_decode();
    if (decodes_so_far) ++c.num_decode_reqs;
  }

  const int64_t tokens = c.num_tokens;
  c.positions = Tensor::empty({tokens}, DType::kI64);
  c.token_req = Tensor::empty({tokens}, DType::kI32);
  c.query_start = Tensor::empty({c.num_reqs + 1}, DType::kI32);
  c.block_tables = Tensor::empty({c.num_reqs, static_cast<int64_t>(max_blocks)}, DType::kI32);
  c.block_tables.fill(-1);
  c.slot_mapping = Tensor::empty({tokens}, DType::kI64);
  c.context_key_lens = Tensor::empty({tokens}, DType::kI32);
  c.causal_key_lens = Tensor::empty({tokens}, DType::kI32);

  auto* pos = c.positions.data<int64_t>();
  auto* req_of = c.token_req.data<int32_t>();
  auto* qs = c.query_start.data<int32_t>();
  auto* tables = c.block_tables.data<int32_t>();
  auto* slots = c.slot_mapping.data<int64_t>();
  auto* ctx_lens = c.context_key_lens.data<int32_t>();
  auto* causal_lens = c.causal_key_lens.data<int32_t>();

  int64_t t = 0;
  qs[0] = 0;
  for (int64_t i = 0; i < c.num_reqs; ++i) {
    const ScheduledRequest& r = requests[static_cast<size_t>(i)];
    std::copy(r.block_table.begin(), r.block_table.end(),
              tables + i * static_cast<int64_t>(max_blocks));
    const auto local_ctx = layout_.local_len(r.num_computed, rank_);
    c.local_context_lens.push_back(local_ctx);
    for (int64_t j = 0; j < r.num_scheduled; ++j, ++t) {
      const int64_t p = r.num_computed + j;
      pos[t] = p;
      req_of[t] = static_cast<int32_t>(i);
      slots[t] = layout_.slot(p, rank_, r.block_table);
      ctx_lens[t] = static_cast<int32_t>(local_ctx);
      causal_lens[t] = static_cast<int32_t>(layout_.local_len(p + 1, rank_));
    }
    qs[i + 1] = static_cast<int32_t>(t);
  }
  build_extra(requests, md);
  return md;
}

}  // namespace ctxpar::attention
