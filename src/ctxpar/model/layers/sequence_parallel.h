// Hidden states split over the TP group by tokens (sequence parallelism, "flashcomm1", and
// DSA-CP): rank r keeps rows [r·S, (r+1)·S) of the step's tokens padded to T·S
// (attention::TokenShard; padding rows are zero). The three collectives that move between
// that form and the replicated one:
//   gather          [S, d] → [tokens, d]   before a column-parallel layer (all-gather)
//   reduce_scatter  [tokens, d] partial sums → [S, d] complete rows, after a row-parallel
//                   layer: the same sums an all-reduce would make, in the same rank order
//   local_rows      [tokens, d] replicated → [S, d], no communication
#pragma once

#include "ctxpar/attention/attention_metadata.h"
#include "ctxpar/comm/communicator.h"
#include "ctxpar/core/tensor.h"

namespace ctxpar::model {

class SequenceShard {
 public:
  // shard.size must be tp.size() and shard.rank tp.rank().
  SequenceShard(const attention::TokenShard& shard, Communicator& tp);

  const attention::TokenShard& shard() const { return shard_; }
  int64_t rows() const { return shard_.per_rank; }  // S

  Tensor gather(const Tensor& local) const;
  Tensor reduce_scatter(const Tensor& partial) const;
  Tensor local_rows(const Tensor& full) const;

 private:
  attention::TokenShard shard_;
  Communicator& tp_;
};

}  // namespace ctxpar::model
