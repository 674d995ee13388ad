#include "ctxpar/model/layers/sequence_parallel.h"

#include "ctxpar/core/error.h"

namespace ctxpar::model {

SequenceShard::SequenceShard(const attention::TokenShard& shard, Communicator& tp)
    : shard_(shard), tp_(tp) {
  CTXPAR_CHECK(shard.size == tp.size() && shard.rank == tp.rank(),
               "sequence shard of rank {} of {} used with a TP group where this is rank {} of {}",
               shard.rank, shard.size, tp.rank(), tp.size());
}

Tensor SequenceShard::gather(const Tensor& local) const {
  CTXPAR_CHECK(local.ndim() == 2 && local.size(0) == shard_.per_rank,
               "sequence-parallel rows {} must be [{}, d]", local.describe(), shard_.per_rank);
  if (tp_.size() == 1) return local.slice(0, 0, shard_.num_tokens);
  return tp_.all_gather(local, 0).slice(0, 0, shard_.num_tokens);
}

Tensor SequenceShard::reduce_scatter(const Tensor& partial) const {
  CTXPAR_CHECK(partial.ndim() == 2 && partial.size(0) == shard_.num_tokens,
               "partial sums {} must be [{}, d]", partial.describe(), shard_.num_tokens);
  Tensor padded = Tensor::zeros({shard_.padded_tokens(), partial.size(1)}, partial.dtype());
  padded.slice(0, 0, shard_.num_tokens).copy_from(partial);
  if (tp_.size() == 1) return padded;
  return tp_.reduce_scatter(padded, 0);
}

Tensor SequenceShard::local_rows(const Tensor& full) const {
  CTXPAR_CHECK(full.ndim() == 2 && full.size(0) == shard_.num_tokens,
               "replicated rows {} must be [{}, d]", full.describe(), shard_.num_tokens);
  Tensor local = Tensor::zeros({shard_.per_rank, full.size(1)}, full.dtype());
  if (shard_.num_local() > 0) {
    local.slice(0, 0, shard_.num_local()).copy_from(full.slice(0, shard_.first, shard_.last));
  }
  return local;
}

}  // namespace ctxpar::model
