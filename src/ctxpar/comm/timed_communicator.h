// TimedCommunicator: forwards every collective to the communicator it owns and adds the wall
// time spent inside it (waiting for the other ranks included) to a counter, which the
// communicators it splits off share. ParallelGroups wraps its TP and DCP groups in one, so a
// step can report the share of its time spent in collectives.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "ctxpar/comm/communicator.h"

namespace ctxpar {

class TimedCommunicator : public Communicator {
 public:
  // nanoseconds may be shared by several ranks' communicators (then it sums their time).
  TimedCommunicator(std::unique_ptr<Communicator> inner,
                    std::shared_ptr<std::atomic<int64_t>> nanoseconds);

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string backend_name() const override { return inner_->backend_name(); }
  void all_gather(const Tensor& input, Tensor& output, int dim) override;
  void all_to_all(const Tensor& input, Tensor& output, int dim) override;
  void reduce_scatter(const Tensor& input, Tensor& output, int dim) override;
  void all_reduce(Tensor& tensor) override;
  void broadcast(Tensor& tensor, int root) override;
  void broadcast_bytes(std::vector<uint8_t>& bytes, int root) override;
  void barrier() override;
  // The child is timed into the same counter.
  std::unique_ptr<Communicator> split(int color, int key) override;

  using Communicator::all_gather;
  using Communicator::all_to_all;
  using Communicator::reduce_scatter;

 private:
  template <typename Fn>
  void timed(Fn&& fn);

  std::unique_ptr<Communicator> inner_;
  std::shared_ptr<std::atomic<int64_t>> nanoseconds_;
};

}  // namespace ctxpar
