#include "ctxpar/attention/context_parallel/sfa_dsa_cp_attention.h"

#include <cmath>

#include "ctxpar/core/error.h"

namespace ctxpar::attention {
namespace {

const AttentionMetadata& slice_metadata(const AttentionMetadata& md, const char* impl) {
  CTXPAR_CHECK(md.dsa_cp && md.dsa_cp->local,
               "{} attends a rank's token slice and needs DSA-CP metadata; build it with "
               "DsaCpBuilderMixin",
               impl);
  return *md.dsa_cp->local;
}

}  // namespace

void SfaDsaCpAttention::attend(const AttentionMetadata& md, const Tensor& q_abs,
                               const Tensor& selected, Tensor& o_lat, Tensor& lse) {
  const AttentionMetadata& local = slice_metadata(md, "SfaDsaCpAttention");
  CTXPAR_CHECK(md.layout.dcp_size() == 1,
               "SfaDsaCpAttention reads positions as local indices, which holds only without "
               "DCP (N = {}); use SfaDsaCpDcpAttention",
               md.layout.dcp_size());
  if (q_abs.size(0) == 0) return;
  attend_local(local, q_abs, selected, o_lat, lse);
}

void SfaDsaCpDcpAttention::attend(const AttentionMetadata& md, const Tensor& q_abs,
                                  const Tensor& selected, Tensor& o_lat, Tensor& lse) {
  slice_metadata(md, "SfaDsaCpDcpAttention");
  const TokenShard& shard = md.dsa_cp->shard;
  CTXPAR_CHECK(md.dcp && md.layout.dcp_size() == dcp_group().size() &&
                   shard.size == dcp_group().size() && shard.rank == dcp_group().rank(),
               "DSA-CP with DCP needs the DCP group to be the TP group (N == T): token slices "
               "over {} ranks (this rank {}), DCP group of {} (this rank {})",
               shard.size, shard.rank, dcp_group().size(), dcp_group().rank());
  // Every token's selection on every rank: [tokens, k].
  const Tensor selected_all = gather_slices(selected, shard, -1);
  if (md.decode_only()) {
    attend_decode_slices(md, q_abs, selected_all, o_lat, lse);
  } else {
    attend_gathered(md, selected_all, shard.first, q_abs, o_lat, lse);
  }
}

Tensor SfaDsaCpDcpAttention::gather_slices(const Tensor& mine, const TokenShard& shard,
                                           double pad) const {
  Shape shape = mine.shape();
  shape[0] = shard.per_rank;
  Tensor send = Tensor::empty(shape, mine.dtype());
  send.fill(pad);
  if (shard.num_local() > 0) send.slice(0, 0, shard.num_local()).copy_from(mine);
  return dcp_group().all_gather(send, 0).slice(0, 0, shard.num_tokens);
}

void SfaDsaCpDcpAttention::attend_decode_slices(const AttentionMetadata& md, const Tensor& q_abs,
                                                const Tensor& selected_all, Tensor& o_lat,
                                                Tensor& lse) {
  const TokenShard& shard = md.dsa_cp->shard;
  const int64_t tokens = shard.num_tokens, heads = q_abs.size(1), lora = dims().kv_lora_rank;
  const Tensor q_all = gather_slices(q_abs, shard, 0);  // [tokens, H, kv_lora + rope]
  const Tensor local = owned_local_indices(md.layout, selected_all);
  // Partials of every rank's slice, padded rows empty: [N·S, H, kv_lora], [N·S, H].
  Tensor partial_out = Tensor::zeros({shard.padded_tokens(), heads, lora}, DType::kF32);
  Tensor partial_lse = Tensor::empty({shard.padded_tokens(), heads}, DType::kF32);
  partial_lse.fill(-INFINITY);
  Tensor real_out = partial_out.slice(0, 0, tokens);
  Tensor real_lse = partial_lse.slice(0, 0, tokens);
  attend_local(md, q_all, local, real_out, real_lse);
  Tensor merged_out = Tensor::empty({shard.per_rank, heads, lora}, DType::kF32);
  Tensor merged_lse = Tensor::empty({shard.per_rank, heads}, DType::kF32);
  merge_tokens_across_group(partial_out, partial_lse, merged_out, merged_lse);
  if (shard.num_local() == 0) return;
  o_lat.copy_from(merged_out.slice(0, 0, shard.num_local()));
  lse.copy_from(merged_lse.slice(0, 0, shard.num_local()));
}

}  // namespace ctxpar::attention
