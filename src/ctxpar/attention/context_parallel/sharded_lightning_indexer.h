// The Lightning Indexer in the sharded mode (--additional-config
// '{"sfa_indexer_mode": "sharded"}'): no replicated cache. Each rank of the DCP group keeps
// the index keys of the tokens it owns under the DCP layout (the same rows as its latent
// shard), scores only those, and keeps its own top-k as (score, global position) pairs; one
// all-gather brings every rank's list to every rank, and each merges them into the same
// global top-k (kernels/topk_merge.h, ties to the lower position). A rank's list holds its
// top-k in the global order, so the result is exactly the replicated mode's selection, with
// indexer memory divided by N.
#pragma once

#include "ctxpar/attention/lightning_indexer.h"
#include "ctxpar/comm/communicator.h"

namespace ctxpar::attention {

class ShardedLightningIndexer : public LightningIndexer {
 public:
  // key_cache: [num_blocks, B, head_dim], this rank's tokens only (local slots).
  ShardedLightningIndexer(const IndexerDims& dims, Tensor key_cache, ThreadPool& pool,
                          Communicator& dcp_group);

 protected:
  void write_keys(const AttentionMetadata& md, const Tensor& k) override;
  void select_topk(const AttentionMetadata& md, const Tensor& q, const Tensor& weights,
                   Tensor& selected) override;

 private:
  Communicator& group_;
};

}  // namespace ctxpar::attention
