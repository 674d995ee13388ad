// GQA under DCP: the normal impl with the context stage replaced. The ranks of a DCP group
// share one (replicated) KV head and each stores a shard of the sequence, so each rank
// attends the whole group's queries to its shard and the group merges by LSE (DESIGN.md §4).
#pragma once

#include "ctxpar/attention/context_parallel/dcp_attention_mixin.h"
#include "ctxpar/attention/gqa_attention.h"

namespace ctxpar::attention {

class GqaDcpAttention : public GqaAttention, protected DcpAttentionMixin {
 public:
  // k_cache / v_cache hold this rank's shard (num_blocks · B rows, 1/N of the N = 1 size for
  // the same token capacity). dcp_group: the ranks sharing this KV head's sequence.
  GqaDcpAttention(const GqaDims& dims, Tensor k_cache, Tensor v_cache, ThreadPool& pool,
                  Communicator& dcp_group, DcpCommPlan plan);

 protected:
  void attend_context(const AttentionMetadata& md, const Tensor& q, Tensor& out,
                      Tensor& lse) override;
};

}  // namespace ctxpar::attention
