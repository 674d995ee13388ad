#include "ctxpar/attention/context_parallel/dcp_attention_mixin.h"

#include <cstring>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/merge.h"

namespace ctxpar::attention {

DcpCommPlan parse_dcp_comm_plan(std::string_view name) {
  if (name == "ag_rs") return DcpCommPlan::kAllGatherReduceScatter;
  if (name == "a2a") return DcpCommPlan::kAllToAll;
  CTXPAR_INPUT_FAIL(
      "--dcp-comm-backend '{}' is not valid; use ag_rs (all-gather + reduce-scatter) "
      "or a2a (all-to-all)",
      name);
}

std::string_view dcp_comm_plan_name(DcpCommPlan plan) {
  return plan == DcpCommPlan::kAllToAll ? "a2a" : "ag_rs";
}

DcpAttentionMixin::DcpAttentionMixin(Communicator& dcp_group, DcpCommPlan plan)
    : group_(dcp_group), plan_(plan) {}

Tensor DcpAttentionMixin::gather_heads(const Tensor& x) const {
  return group_.all_gather(x, 1);
}

void DcpAttentionMixin::merge_across_group(Tensor& partial_out, const Tensor& partial_lse,
                                           Tensor& out, Tensor& lse) const {
  const int64_t n = group_.size();
  const int64_t tokens = partial_out.size(0), heads = out.size(1), d = out.size(2);
  CTXPAR_CHECK(partial_out.ndim() == 3 && partial_out.size(1) == n * heads &&
                   partial_out.size(2) == d && out.size(0) == tokens &&
                   partial_lse.size(0) == tokens && partial_lse.size(1) == n * heads &&
                   lse.size(0) == tokens && lse.size(1) == heads,
               "merge_across_group: partials {} / {} do not match outputs {} / {} for a group "
               "of {}",
               partial_out.describe(), partial_lse.describe(), out.describe(), lse.describe(), n);
  if (plan_ == DcpCommPlan::kAllToAll) {
    merge_a2a(partial_out, partial_lse, out, lse);
  } else {
    merge_ag_rs(partial_out, partial_lse, out, lse);
  }
}

void DcpAttentionMixin::merge_ag_rs(Tensor& partial_out, const Tensor& partial_lse, Tensor& out,
                                    Tensor& lse) const {
  const int64_t heads = out.size(1);
  // [N, tokens, N·H_l]: every rank's LSE for every gathered head.
  const Tensor all_lse = group_.all_gather(partial_lse.contiguous().unsqueeze(0), 0);
  Tensor merged_lse = Tensor::empty(partial_lse.shape(), DType::kF32);
  kernels::rescale_partial(partial_out, partial_lse, all_lse, merged_lse);
  // Summing the rescaled partials over ranks is the merge; each rank keeps its heads.
  group_.reduce_scatter(partial_out, out, 1);
  lse.copy_from(merged_lse.slice(1, group_.rank() * heads, (group_.rank() + 1) * heads));
}

void DcpAttentionMixin::merge_a2a(const Tensor& partial_out, const Tensor& partial_lse, Tensor& out,
                                  Tensor& lse) const {
  const int64_t n = group_.size();
  const int64_t tokens = out.size(0), heads = out.size(1), d = out.size(2);
  // One message per destination rank j: its heads' (o, lse) packed as d + 1 floats, so a
  // single all-to-all carries both. [N, tokens, H_l, d + 1]
  Tensor send = Tensor::empty({n, tokens, heads, d + 1}, DType::kF32);
  Tensor send_out = send.slice(3, 0, d);
  send_out.copy_from(partial_out.view({tokens, n, heads, d}).transpose(0, 1));
  Tensor send_lse = send.select(3, d);
  send_lse.copy_from(partial_lse.contiguous().view({tokens, n, heads}).transpose(0, 1));
  // [N (source rank), tokens, H_l, d + 1]: every rank's partial for this rank's heads.
  const Tensor recv = group_.all_to_all(send, 0);
  kernels::merge_partials(recv.slice(3, 0, d).contiguous(), recv.select(3, d).contiguous(), out,
                          lse);
}

void DcpAttentionMixin::merge_tokens_across_group(Tensor& partial_out, const Tensor& partial_lse,
                                                  Tensor& out, Tensor& lse) const {
  const int64_t n = group_.size();
  const int64_t s = out.size(0), heads = out.size(1), d = out.size(2);
  CTXPAR_CHECK(partial_out.ndim() == 3 && partial_out.size(0) == n * s &&
                   partial_out.size(1) == heads && partial_out.size(2) == d &&
                   partial_lse.ndim() == 2 && partial_lse.size(0) == n * s &&
                   partial_lse.size(1) == heads && lse.ndim() == 2 && lse.size(0) == s &&
                   lse.size(1) == heads,
               "merge_tokens_across_group: partials {} / {} do not match outputs {} / {} for a "
               "group of {}",
               partial_out.describe(), partial_lse.describe(), out.describe(), lse.describe(), n);
  if (plan_ == DcpCommPlan::kAllToAll) {
    // One message per destination rank j: its S tokens' (o, lse) packed as d + 1 floats.
    Tensor send = Tensor::empty({n * s, heads, d + 1}, DType::kF32);
    Tensor send_out = send.slice(2, 0, d);
    send_out.copy_from(partial_out);
    Tensor send_lse = send.select(2, d);
    send_lse.copy_from(partial_lse);
    // [N (source rank), S, H, d + 1]: every rank's partial for this rank's tokens.
    const Tensor recv = group_.all_to_all(send, 0).view({n, s, heads, d + 1});
    kernels::merge_partials(recv.slice(3, 0, d).contiguous(), recv.select(3, d).contiguous(), out,
                            lse);
    return;
  }
  // [N, N·S, H]: every rank's LSE for every query token.
  const Tensor all_lse = group_.all_gather(partial_lse.contiguous().unsqueeze(0), 0);
  Tensor merged_lse = Tensor::empty(partial_lse.shape(), DType::kF32);
  kernels::rescale_partial(partial_out, partial_lse, all_lse, merged_lse);
  group_.reduce_scatter(partial_out, out, 0);
  lse.copy_from(merged_lse.slice(0, group_.rank() * s, (group_.rank() + 1) * s));
}

}  // namespace ctxpar::attention
