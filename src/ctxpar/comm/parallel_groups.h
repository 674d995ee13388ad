// ParallelGroups: the communicators of one rank in a (TP, DCP) layout (DESIGN.md §1).
// Pipeline and data parallelism are out of scope, so the world is exactly one TP group of
// T ranks, and DCP groups are consecutive TP ranks: group g = {g·N, …, g·N+N-1}, so
// dcp_rank = tp_rank % N.
#pragma once

#include <atomic>
#include <cstdint>
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
  // ordered separately) and this rank's DCP group, both timed (collective_seconds). world
  // must outlive this object.
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

  // Wall seconds this rank has spent inside TP and DCP collectives so far, waiting for the
  // other ranks included (world's own traffic, the engine's step broadcasts, is not counted).
  double collective_seconds() const { return static_cast<double>(collective_ns_->load()) * 1e-9; }

 private:
  Communicator* world_;
  std::shared_ptr<std::atomic<int64_t>> collective_ns_;
  std::unique_ptr<Communicator> tp_;
  std::unique_ptr<Communicator> dcp_;
};

}  // namespace ctxpar
