#include "ctxpar/attention/context_parallel/sharded_lightning_indexer.h"

#include <cstring>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/kv_cache_ops.h"
#include "ctxpar/kernels/topk_merge.h"

namespace ctxpar::attention {

ShardedLightningIndexer::ShardedLightningIndexer(const IndexerDims& dims, Tensor key_cache,
                                                 ThreadPool& pool, Communicator& dcp_group)
    : LightningIndexer(dims, std::move(key_cache), pool), group_(dcp_group) {}

void ShardedLightningIndexer::write_keys(const AttentionMetadata& md, const Tensor& k) {
  CTXPAR_CHECK(md.dcp && md.dcp->dcp_size == group_.size(),
               "the sharded indexer needs DCP metadata for a group of {}; build it with "
               "DcpMetadataBuilder",
               group_.size());
  CTXPAR_CHECK(key_cache().size(1) == md.layout.block_size(),
               "the sharded indexer cache {} needs B = {} rows per block (a rank keeps only its "
               "own tokens)",
               key_cache().describe(), md.layout.block_size());
  Tensor cache = key_cache();
  kernels::write_cache_rows(k, md.common.slot_mapping, cache);  // owned tokens only
}

void ShardedLightningIndexer::select_topk(const AttentionMetadata& md, const Tensor& q,
                                          const Tensor& weights, Tensor& selected) {
  const CommonAttentionMetadata& c = md.common;
  const int64_t tokens = c.num_tokens, k = dims().topk;
  const int rank = md.dcp->dcp_rank;
  // This rank's top-k over its own keys: local indices [0, local_len(p + 1, rank)).
  Tensor local = Tensor::empty({tokens, k}, DType::kI32);
  Tensor values = Tensor::empty({tokens, k}, DType::kF32);
  score_and_pick(md, q, weights, c.causal_key_lens, local, &values);

  // One message per rank: [tokens, k, 2] i32 of (score bits, global position or -1).
  Tensor mine = Tensor::empty({tokens, k, 2}, DType::kI32);
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t j = 0; j < k; ++j) {
      const int32_t li = local.data<int32_t>()[t * k + j];
      int32_t* out = mine.data<int32_t>() + (t * k + j) * 2;
      std::memcpy(&out[0], values.data<float>() + t * k + j, sizeof(float));
      out[1] = li < 0 ? -1 : static_cast<int32_t>(md.layout.global_position(li, rank));
    }
  }
  const Tensor all = group_.all_gather(mine, 1);  // [tokens, N·k, 2]
  const int64_t m = all.size(1);
  Tensor cand_scores = Tensor::empty({tokens, m}, DType::kF32);
  Tensor cand_positions = Tensor::empty({tokens, m}, DType::kI32);
  for (int64_t i = 0; i < tokens * m; ++i) {
    std::memcpy(cand_scores.data<float>() + i, all.data<int32_t>() + 2 * i, sizeof(float));
    cand_positions.data<int32_t>()[i] = all.data<int32_t>()[2 * i + 1];
  }
  kernels::topk_merge(cand_scores, cand_positions, k, selected, nullptr);
  // A near tie of keys on two ranks shows here when the (k+1)-th is in some rank's list.
  count_near_ties(cand_scores, nullptr, k);
}

}  // namespace ctxpar::attention
