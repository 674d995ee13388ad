#include "ctxpar/comm/parallel_groups.h"

#include "ctxpar/comm/timed_communicator.h"
#include "ctxpar/core/error.h"

namespace ctxpar {

void validate_parallel_sizes(int world_size, int tensor_parallel_size,
                             int decode_context_parallel_size) {
  const int t = tensor_parallel_size;
  const int n = decode_context_parallel_size;
  CTXPAR_CHECK(t >= 1, "tensor-parallel size {} is invalid: it must be at least 1", t);
  CTXPAR_CHECK(n >= 1, "decode-context-parallel size {} is invalid: it must be at least 1", n);
  CTXPAR_CHECK(t == world_size,
               "tensor-parallel size {} must equal the world size {} (pipeline and data "
               "parallelism are not supported, so every rank is in the one TP group)",
               t, world_size);
  CTXPAR_CHECK(t % n == 0,
               "decode-context-parallel size {} must divide the tensor-parallel size {} (DCP "
               "groups are consecutive TP ranks)",
               n, t);
}

ParallelGroups::ParallelGroups(Communicator& world, int tensor_parallel_size,
                               int decode_context_parallel_size)
    : world_(&world), collective_ns_(std::make_shared<std::atomic<int64_t>>(0)) {
  validate_parallel_sizes(world.size(), tensor_parallel_size, decode_context_parallel_size);
  const int n = decode_context_parallel_size;
  tp_ = std::make_unique<TimedCommunicator>(world.split(0, world.rank()), collective_ns_);
  dcp_ = tp_->split(tp_->rank() / n, tp_->rank());
  CTXPAR_CHECK(dcp_->size() == n && dcp_->rank() == tp_->rank() % n,
               "ParallelGroups: DCP group of TP rank {} came out as rank {} of {} (expected {} "
               "of {})",
               tp_->rank(), dcp_->rank(), dcp_->size(), tp_->rank() % n, n);
}

}  // namespace ctxpar
