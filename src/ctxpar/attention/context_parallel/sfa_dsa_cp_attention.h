// Sparse MLA under DSA-CP (DESIGN.md §4 "DSA-CP"): the step's tokens are split over the TP
// group in contiguous slices (AttentionMetadata::dsa_cp) and each rank attends its own slice
// with all heads; the KV of every slice has been all-gathered and written by the caller
// (SfaAttention::write with the step's metadata). The query rows of forward_cached are the
// rank's slice, md.dsa_cp->local.
//  - SfaDsaCpAttention (N = 1): every rank holds the whole latent cache, so its slice
//    attends locally, with no communication.
//  - SfaDsaCpDcpAttention (N = T > 1, the DCP group is the TP group): the latent cache is
//    sharded. The slices' selections are all-gathered first (tokens × topk ints), so every
//    rank knows every token's selection and the group agrees on its collectives.
//      decode-only batches: the slices' absorbed queries are all-gathered too; each rank
//        attends every token (all heads) to the selected keys it owns, and one merge over
//        the group hands each rank the exact result for its own slice (the tokens, not the
//        heads, are what the merge scatters);
//      prefill and mixed batches: the selected keys' KV blocks are gathered group by group
//        exactly as in SFA-DCP (same blocks on every rank), and each rank attends only its
//        slice's tokens of each group against them: no merge.
#pragma once

#include "ctxpar/attention/context_parallel/sfa_dcp_attention.h"
#include "ctxpar/attention/sfa_attention.h"

namespace ctxpar::attention {

class SfaDsaCpAttention : public SfaAttention {
 public:
  // As SfaAttention, with dims.num_heads = all heads of the model.
  using SfaAttention::SfaAttention;

 protected:
  void attend(const AttentionMetadata& md, const Tensor& q_abs, const Tensor& selected,
              Tensor& o_lat, Tensor& lse) override;
};

class SfaDsaCpDcpAttention : public SfaDcpAttention {
 public:
  // As SfaDcpAttention, with dims.num_heads = all heads of the model; dcp_group: the TP
  // group (N == T), its ranks in TP order.
  using SfaDcpAttention::SfaDcpAttention;

 protected:
  void attend(const AttentionMetadata& md, const Tensor& q_abs, const Tensor& selected,
              Tensor& o_lat, Tensor& lse) override;

 private:
  // This rank's rows [num_local, ...] of a per-token tensor, padded to per_rank rows with
  // `pad`, all-gathered over the group: every rank's rows in step order, [num_tokens, ...].
  Tensor gather_slices(const Tensor& mine, const TokenShard& shard, double pad) const;
  void attend_decode_slices(const AttentionMetadata& md, const Tensor& q_abs,
                            const Tensor& selected_all, Tensor& o_lat, Tensor& lse);
};

}  // namespace ctxpar::attention
