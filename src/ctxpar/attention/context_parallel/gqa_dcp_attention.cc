#include "ctxpar/attention/context_parallel/gqa_dcp_attention.h"

#include "ctxpar/core/error.h"

namespace ctxpar::attention {

GqaDcpAttention::GqaDcpAttention(const GqaDims& dims, Tensor k_cache, Tensor v_cache,
                                 ThreadPool& pool, Communicator& dcp_group, DcpCommPlan plan)
    : GqaAttention(dims, std::move(k_cache), std::move(v_cache), pool),
      DcpAttentionMixin(dcp_group, plan) {
  // The group's gathered query heads must all read the same (replicated) KV head.
  CTXPAR_CHECK(dims.num_kv_heads == 1,
               "GQA with DCP needs one KV head per rank (num_kv_heads <= T and the DCP group "
               "inside one KV head's ranks), got {} KV heads on this rank",
               dims.num_kv_heads);
}

void GqaDcpAttention::attend_context(const AttentionMetadata& md, const Tensor& q, Tensor& out,
                                     Tensor& lse) {
  CTXPAR_CHECK(md.dcp && md.dcp->dcp_size == dcp_group().size(),
               "GQA-DCP attention needs DCP metadata for a group of {}; build it with "
               "DcpMetadataBuilder",
               dcp_group().size());
  const Tensor q_all = gather_heads(q);  // [tokens, N·H_l, d]
  const int64_t tokens = q.size(0), heads_all = q_all.size(1);
  Tensor partial_out = Tensor::empty({tokens, heads_all, dims().head_dim}, DType::kF32);
  Tensor partial_lse = Tensor::empty({tokens, heads_all}, DType::kF32);
  attend_cache(md, q_all, md.common.context_key_lens, partial_out, partial_lse);
  merge_across_group(partial_out, partial_lse, out, lse);
}

}  // namespace ctxpar::attention
