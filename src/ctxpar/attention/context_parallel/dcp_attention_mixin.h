// The DCP impl mixin: the collectives a DCP attention impl adds to its normal twin. Every
// rank of a DCP group holds the same KV heads (GQA) or latent (MLA) but only its shard of
// the sequence, so each rank attends all N·H_l heads of the group over its shard and the
// group merges the partials exactly by LSE.
#pragma once

#include "ctxpar/attention/context_parallel/dcp_comm_plan.h"
#include "ctxpar/comm/communicator.h"
#include "ctxpar/core/tensor.h"

namespace ctxpar::attention {

class DcpAttentionMixin {
 public:
  DcpAttentionMixin(Communicator& dcp_group, DcpCommPlan plan);

  Communicator& dcp_group() const { return group_; }
  DcpCommPlan comm_plan() const { return plan_; }

 protected:
  // Queries of every rank of the group: [tokens, H_l, d] → [tokens, N·H_l, d], heads
  // rank-major (rank r's heads at [r·H_l, (r+1)·H_l)).
  Tensor gather_heads(const Tensor& x) const;

  // Partials of all N·H_l heads over this rank's shard — partial_out [tokens, N·H_l, d]
  // (scaled in place by the ag_rs plan), partial_lse [tokens, N·H_l] — become the exact
  // result over the whole sequence for this rank's heads: out [tokens, H_l, d],
  // lse [tokens, H_l] (caller-allocated, fully written).
  void merge_across_group(Tensor& partial_out, const Tensor& partial_lse, Tensor& out,
                          Tensor& lse) const;

  // The same merge with the query tokens split over the group instead of the heads (DSA-CP
  // decode): partials of every rank's S query tokens with all heads, rank-major —
  // partial_out [N·S, H, d] (scaled in place by the ag_rs plan), partial_lse [N·S, H] — over
  // this rank's shard become the exact result for this rank's own S tokens: out [S, H, d],
  // lse [S, H] (caller-allocated, fully written).
  void merge_tokens_across_group(Tensor& partial_out, const Tensor& partial_lse, Tensor& out,
                                 Tensor& lse) const;

 private:
  void merge_ag_rs(Tensor& partial_out, const Tensor& partial_lse, Tensor& out, Tensor& lse) const;
  void merge_a2a(const Tensor& partial_out, const Tensor& partial_lse, Tensor& out,
                 Tensor& lse) const;

  Communicator& group_;
  DcpCommPlan plan_;
};

}  // namespace ctxpar::attention
