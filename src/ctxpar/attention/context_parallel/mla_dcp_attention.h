// MLA under DCP: the latent cache is sharded along the sequence; the normal impl's decode and
// prefill-context stages are replaced (DESIGN.md §4).
//  - decode: all-gather q_abs over heads, attend to the local shard, merge by LSE across the
//    group, then W_UV on this rank's heads (inherited);
//  - prefill context: each rank contributes its local rows of a window, padded to the
//    longest rank's count, all-gathers them and restores request-contiguous order; every
//    rank then attends its own heads to the whole context, so no merge is needed.
#pragma once

#include "ctxpar/attention/context_parallel/dcp_attention_mixin.h"
#include "ctxpar/attention/mla_attention.h"

namespace ctxpar::attention {

class MlaDcpAttention : public MlaAttention, protected DcpAttentionMixin {
 public:
  // latent_cache holds this rank's shard of every request's latent rows.
  MlaDcpAttention(const MlaDims& dims, Tensor latent_cache, Tensor kv_b_proj, ThreadPool& pool,
                  Communicator& dcp_group, DcpCommPlan plan);

 protected:
  void attend_decode(const AttentionMetadata& md, const Tensor& q_abs, Tensor& o_lat,
                     Tensor& lse) override;
  ContextChunk load_context(const AttentionMetadata& md, int64_t first, int64_t window) override;
  int64_t context_group_size() const override { return dcp_group().size(); }
};

}  // namespace ctxpar::attention
