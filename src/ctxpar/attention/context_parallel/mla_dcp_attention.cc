#include "ctxpar/attention/context_parallel/mla_dcp_attention.h"

#include <algorithm>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/kv_cache_ops.h"

namespace ctxpar::attention {
namespace {

void check_dcp(const AttentionMetadata& md, const Communicator& group) {
  CTXPAR_CHECK(md.dcp && md.dcp->dcp_size == group.size(),
               "MLA-DCP attention needs DCP metadata for a group of {}; build it with "
               "DcpMetadataBuilder",
               group.size());
}

}  // namespace

MlaDcpAttention::MlaDcpAttention(const MlaDims& dims, Tensor latent_cache, Tensor kv_b_proj,
                                 ThreadPool& pool, Communicator& dcp_group, DcpCommPlan plan)
    : MlaAttention(dims, std::move(latent_cache), std::move(kv_b_proj), pool),
      DcpAttentionMixin(dcp_group, plan) {}

void MlaDcpAttention::attend_decode(const AttentionMetadata& md, const Tensor& q_abs, Tensor& o_lat,
                                    Tensor& lse) {
  check_dcp(md, dcp_group());
  const Tensor q_all = gather_heads(q_abs);  // [decodes, N·H_l, kv_lora + rope]
  const int64_t n = q_abs.size(0), heads_all = q_all.size(1);
  Tensor partial_out = Tensor::empty({n, heads_all, dims().kv_lora_rank}, DType::kF32);
  Tensor partial_lse = Tensor::empty({n, heads_all}, DType::kF32);
  attend_latent(md, q_all, md.common.token_req.slice(0, 0, n),
                md.common.causal_key_lens.slice(0, 0, n), partial_out, partial_lse);
  merge_across_group(partial_out, partial_lse, o_lat, lse);
}

ContextChunk MlaDcpAttention::load_context(const AttentionMetadata& md, int64_t first,
                                           int64_t window) {
  check_dcp(md, dcp_group());
  const CommonAttentionMetadata& c = md.common;
  const int ranks = dcp_group().size();
  const int me = dcp_group().rank();
  const int64_t row = dims().latent_dim();
  const int32_t* matrix = md.dcp->context_len_matrix.data<int32_t>();  // [num_reqs, N]
  auto rows_of = [&](int64_t req, int rank) {
    return std::clamp<int64_t>(matrix[req * ranks + rank] - first, 0, window);
  };

  // Send buffer: per prefill request, a slot as long as rank 0's count (the longest), holding
  // this rank's rows first. Every rank derives the same slot sizes from shared metadata.
  std::vector<int64_t> slot_start{0};
  for (int64_t i = c.num_decode_reqs; i < c.num_reqs; ++i) {
    slot_start.push_back(slot_start.back() + rows_of(i, 0));
  }
  const int64_t slot_rows = slot_start.back();
  Tensor send = Tensor::zeros({slot_rows, row}, DType::kF32);
  const int64_t max_blocks = c.block_tables.size(1);
  for (int64_t i = c.num_decode_reqs, j = 0; i < c.num_reqs; ++i, ++j) {
    const std::span<const int32_t> table(c.block_tables.data<int32_t>() + i * max_blocks,
                                         static_cast<size_t>(max_blocks));
    const int64_t mine = rows_of(i, me);
    Tensor dst = send.slice(0, slot_start[j], slot_start[j] + mine);
    kernels::read_cache_rows(latent_cache(), table, first, mine, dst);
  }
  const Tensor gathered = dcp_group().all_gather(send, 0);  // [N·slot_rows, row], rank-major

  // Request-contiguous order: per request, rank 0's rows, then rank 1's, ... Order inside a
  // request is irrelevant: context attention is not causal and k_pe is already roped.
  ContextChunk chunk;
  chunk.key_start.push_back(0);
  int64_t total = 0;
  for (int64_t i = c.num_decode_reqs; i < c.num_reqs; ++i) {
    for (int r = 0; r < ranks; ++r) total += rows_of(i, r);
    chunk.key_start.push_back(static_cast<int32_t>(total));
  }
  chunk.rows = Tensor::empty({total, row}, DType::kF32);
  int64_t at = 0;
  for (int64_t i = c.num_decode_reqs, j = 0; i < c.num_reqs; ++i, ++j) {
    for (int r = 0; r < ranks; ++r) {
      const int64_t count = rows_of(i, r);
      const int64_t src = r * slot_rows + slot_start[j];
      chunk.rows.slice(0, at, at + count).copy_from(gathered.slice(0, src, src + count));
      at += count;
    }
  }
  return chunk;
}

}  // namespace ctxpar::attention
