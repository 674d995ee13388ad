// ParallelGroups: the communicators of one rank in a (TP, DCP) layout (DESIGN.md §1).
// Pipeline and data parallelism are out of scope, so the world is exactly one TP group of
// T ranks, and DCP groups are consecutive TP ranks: group g = {g·N, …, g·N+N-1}, so
// dcp_rank = tp_rank % N.
#pragma once

#include <memory>

#include "ctxpar/comm/communicator.h"

namespace ctxpar {

// Start-up check, no communication: throws an Error naming the numbers and the rule broken
// when T < 1, N < 1, T != world_size or N does not divide T.
void validate_parallel_sizes(int world_size, int tensor_parallel_size,
                             int decode_context_parallel_size);

class ParallelGroups {
 public:
  // Collective over world (every rank calls it with the same sizes). Validates the sizes,
  // then splits world into the TP group (all ranks, its own communicator so TP traffic is
  // ordered separately) and this rank's DCP group. world must outlive this object.
  ParallelGroups(Communicator& world, int tensor_parallel_size, int decode_context_parallel_size);

  Communicator& world() const { return *world_; }
  Communicator& tp() const { return *tp_; }
  Communicator& dcp() const { return *dcp_; }

  int tp_rank() const { return tp_->rank(); }
  int tp_size() const { return tp_->size(); }
  int dcp_rank() const { return dcp_->rank(); }
  int dcp_size() const { return dcp_->size(); }
  // Index g of this rank's DCP group (tp_rank / N).
  int dcp_group() const { return tp_rank() / dcp_size(); }

 private:
  Communicator* world_;
  std::unique_ptr<Communicator> tp_;
  std::unique_ptr<Communicator> dcp_;
};

}  // namespace ctxpar
