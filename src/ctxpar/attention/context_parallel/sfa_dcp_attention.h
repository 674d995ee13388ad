// Sparse MLA under DCP with the indexer's selection identical on every rank (DESIGN.md §4
// "SFA"): the latent cache is sharded along the sequence, so the attention stage of the
// normal impl is replaced; q absorption and W_UV are inherited. The selection agrees across
// ranks because every rank runs the same indexer code on the same replicated activations
// (replicated mode) or merges the same all-gathered lists (sharded mode); both branches
// below then issue the same collectives with the same shapes on every rank.
//  - decode-only batches: every rank keeps the selected positions it owns, as local indices
//    in selection order (others dropped), attends the whole group's gathered q_abs heads to
//    them, and the group merges the partials by LSE; a rank owning none of a token's keys
//    contributes (0, -inf);
//  - prefill and mixed batches: the cache is written first, then every rank copies its B
//    rows of each virtual block that a selected key lives in, the group all-gathers them,
//    and each rank attends its own heads to the gathered rows, so no merge is needed. A
//    position p of gathered block u (of U) sits at row (owner(p)·U + u)·B + local_index(p) % B,
//    right for every interleave size. Tokens are taken in groups whose gathered rows stay
//    under max_context_chunk (at least one token per group).
#pragma once

#include "ctxpar/attention/context_parallel/dcp_attention_mixin.h"
#include "ctxpar/attention/sfa_attention.h"

namespace ctxpar::attention {

class SfaDcpAttention : public SfaAttention, protected DcpAttentionMixin {
 public:
  // latent_cache holds this rank's shard; dcp_group: the ranks sharing the sequence.
  SfaDcpAttention(const MlaDims& dims, Tensor latent_cache, Tensor kv_b_proj, ThreadPool& pool,
                  Communicator& dcp_group, DcpCommPlan plan);

 protected:
  void attend(const AttentionMetadata& md, const Tensor& q_abs, const Tensor& selected,
              Tensor& o_lat, Tensor& lse) override;

  // The selected global positions of [tokens, k] that this rank owns, as local indices in
  // selection order, -1 after them: [tokens, k] i32.
  Tensor owned_local_indices(const kv::DcpLayout& layout, const Tensor& selected) const;

  // The prefill / mixed path: groups md's tokens as described above, using selected_all
  // [md tokens, k] (every token's selection, the same on every rank, so all ranks gather the
  // same blocks), and attends the tokens [own_first, own_first + q_abs.size(0)) with q_abs
  // [own tokens, heads, kv_lora + rope] → o_lat [own tokens, heads, kv_lora], lse [own
  // tokens, heads]. SFA-DCP owns every token; DSA-CP owns its slice.
  void attend_gathered(const AttentionMetadata& md, const Tensor& selected_all, int64_t own_first,
                       const Tensor& q_abs, Tensor& o_lat, Tensor& lse);

 private:
  void attend_decode(const AttentionMetadata& md, const Tensor& q_abs, const Tensor& selected,
                     Tensor& o_lat, Tensor& lse);
};

}  // namespace ctxpar::attention
