#include "ctxpar/attention/context_parallel/sfa_dcp_attention.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/attention.h"

namespace ctxpar::attention {

SfaDcpAttention::SfaDcpAttention(const MlaDims& dims, Tensor latent_cache, Tensor kv_b_proj,
                                 ThreadPool& pool, Communicator& dcp_group, DcpCommPlan plan)
    : SfaAttention(dims, std::move(latent_cache), std::move(kv_b_proj), pool),
      DcpAttentionMixin(dcp_group, plan) {}

void SfaDcpAttention::attend(const AttentionMetadata& md, const Tensor& q_abs,
                             const Tensor& selected, Tensor& o_lat, Tensor& lse) {
  CTXPAR_CHECK(md.dcp && md.dcp->dcp_size == dcp_group().size() &&
                   md.layout.dcp_size() == dcp_group().size(),
               "SFA-DCP attention needs DCP metadata for a group of {}; build it with "
               "DcpMetadataBuilder",
               dcp_group().size());
  CTXPAR_CHECK(!md.dsa_cp,
               "SfaDcpAttention attends all of a step's tokens; a DSA-CP step (token slices per "
               "rank) needs SfaDsaCpDcpAttention");
  // Every rank sees the same batch, so all take the same branch and the same collectives.
  if (md.decode_only()) {
    attend_decode(md, q_abs, selected, o_lat, lse);
  } else {
    attend_gathered(md, selected, 0, q_abs, o_lat, lse);
  }
}

Tensor SfaDcpAttention::owned_local_indices(const kv::DcpLayout& layout,
                                            const Tensor& selected) const {
  const int64_t tokens = selected.size(0), k = selected.size(1);
  const int me = dcp_group().rank();
  Tensor local = Tensor::empty({tokens, k}, DType::kI32);
  for (int64_t t = 0; t < tokens; ++t) {
    const int32_t* sel = selected.data<int32_t>() + t * k;
    int32_t* out = local.data<int32_t>() + t * k;
    int64_t kept = 0;
    for (int64_t j = 0; j < k; ++j) {
      if (sel[j] >= 0 && layout.owner(sel[j]) == me) {
        out[kept++] = static_cast<int32_t>(layout.local_index(sel[j]));
      }
    }
    std::fill(out + kept, out + k, -1);
  }
  return local;
}

void SfaDcpAttention::attend_decode(const AttentionMetadata& md, const Tensor& q_abs,
                                    const Tensor& selected, Tensor& o_lat, Tensor& lse) {
  const int64_t tokens = q_abs.size(0);
  // The selected keys this rank owns, as local indices, in selection order; -1 after.
  const Tensor local = owned_local_indices(md.layout, selected);
  const Tensor q_all = gather_heads(q_abs);  // [tokens, N·H_l, kv_lora + rope]
  Tensor partial_out = Tensor::empty({tokens, q_all.size(1), dims().kv_lora_rank}, DType::kF32);
  Tensor partial_lse = Tensor::empty({tokens, q_all.size(1)}, DType::kF32);
  attend_local(md, q_all, local, partial_out, partial_lse);
  merge_across_group(partial_out, partial_lse, o_lat, lse);
}

void SfaDcpAttention::attend_gathered(const AttentionMetadata& md, const Tensor& selected,
                                      int64_t own_first, const Tensor& q_abs, Tensor& o_lat,
                                      Tensor& lse) {
  const CommonAttentionMetadata& c = md.common;
  const kv::DcpLayout& layout = md.layout;
  const int64_t tokens = c.num_tokens, k = selected.size(1);
  const int64_t own_last = own_first + q_abs.size(0);
  CTXPAR_CHECK(selected.size(0) == tokens && own_first >= 0 && own_last <= tokens,
               "SFA-DCP gathered attention: selections {} for {} tokens, own rows [{}, {})",
               selected.describe(), tokens, own_first, own_last);
  const int64_t b = layout.block_size(), n = layout.dcp_size();
  const int64_t max_blocks = c.block_tables.size(1);
  const int32_t* tables = c.block_tables.data<int32_t>();
  const int32_t* token_req = c.token_req.data<int32_t>();
  // Gathered blocks per token group: each holds B·N rows once gathered.
  const int64_t budget = std::max<int64_t>(1, dims().max_context_chunk / (b * n));

  // (request, virtual block) → its index among the group's gathered blocks, or -1.
  std::vector<int64_t> block_index(static_cast<size_t>(c.num_reqs * max_blocks), -1);
  std::vector<int64_t> group_blocks;  // keys req·max_blocks + vblock, in gathered order
  std::vector<int64_t> fresh;
  const auto key_of = [&](int64_t t, int32_t p) {
    const int64_t vb = layout.virtual_block(p);
    CTXPAR_CHECK(vb < max_blocks && tables[token_req[t] * max_blocks + vb] >= 0,
                 "token {} selected position {} outside its request's block table", t, p);
    return token_req[t] * max_blocks + vb;
  };

  for (int64_t first = 0; first < tokens;) {
    // Grow the group token by token while its blocks fit the budget.
    int64_t last = first;
    while (last < tokens) {
      fresh.clear();
      for (int64_t j = 0; j < k; ++j) {
        const int32_t p = selected.data<int32_t>()[last * k + j];
        if (p < 0) continue;
        const int64_t key = key_of(last, p);
        if (block_index[static_cast<size_t>(key)] >= 0) continue;
        block_index[static_cast<size_t>(key)] =
            static_cast<int64_t>(group_blocks.size() + fresh.size());
        fresh.push_back(key);
      }
      if (last > first && static_cast<int64_t>(group_blocks.size() + fresh.size()) > budget) {
        for (int64_t key : fresh) block_index[static_cast<size_t>(key)] = -1;
        break;
      }
      group_blocks.insert(group_blocks.end(), fresh.begin(), fresh.end());
      ++last;
    }
    const auto u_count = static_cast<int64_t>(group_blocks.size());

    // This rank's B rows of every block, then everyone's: [N·U, B, row], rank-major.
    Tensor send = Tensor::empty({u_count, b, dims().latent_dim()}, latent_cache().dtype());
    for (int64_t u = 0; u < u_count; ++u) {
      send.select(0, u).copy_from(
          latent_cache().select(0, tables[group_blocks[static_cast<size_t>(u)]]));
    }
    const Tensor gathered = dcp_group().all_gather(send, 0);

    // Gathered row of each selected position of the group's own tokens; the gathered rows
    // form one "request" whose block table is the identity.
    const int64_t lo = std::max(first, own_first), hi = std::min(last, own_last);
    if (lo < hi) {
      const int64_t count = hi - lo;
      Tensor indices = Tensor::empty({count, k}, DType::kI32);
      for (int64_t t = lo; t < hi; ++t) {
        for (int64_t j = 0; j < k; ++j) {
          const int32_t p = selected.data<int32_t>()[t * k + j];
          int32_t& out = indices.data<int32_t>()[(t - lo) * k + j];
          if (p < 0) {
            out = -1;
            continue;
          }
          const int64_t u = block_index[static_cast<size_t>(key_of(t, p))];
          out =
              static_cast<int32_t>((layout.owner(p) * u_count + u) * b + layout.local_index(p) % b);
        }
      }
      Tensor identity_table = Tensor::empty({1, n * u_count}, DType::kI32);
      std::iota(identity_table.data<int32_t>(), identity_table.data<int32_t>() + n * u_count, 0);
      const Tensor one_request = Tensor::zeros({count}, DType::kI32);
      Tensor o_chunk = o_lat.slice(0, lo - own_first, hi - own_first);
      Tensor lse_chunk = lse.slice(0, lo - own_first, hi - own_first);
      kernels::paged_mla_attention_selected(
          q_abs.slice(0, lo - own_first, hi - own_first), gathered, dims().kv_lora_rank,
          identity_table, one_request, indices, dims().scale, o_chunk, lse_chunk, pool());
    }

    for (int64_t key : group_blocks) block_index[static_cast<size_t>(key)] = -1;
    group_blocks.clear();
    first = last;
  }
}

}  // namespace ctxpar::attention
