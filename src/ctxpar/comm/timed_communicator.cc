#include "ctxpar/comm/timed_communicator.h"

#include <chrono>
#include <utility>

#include "ctxpar/core/error.h"

namespace ctxpar {

TimedCommunicator::TimedCommunicator(std::unique_ptr<Communicator> inner,
                                     std::shared_ptr<std::atomic<int64_t>> nanoseconds)
    : inner_(std::move(inner)), nanoseconds_(std::move(nanoseconds)) {
  CTXPAR_CHECK(inner_ != nullptr && nanoseconds_ != nullptr,
               "TimedCommunicator needs a communicator and a counter");
}

template <typename Fn>
void TimedCommunicator::timed(Fn&& fn) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  fn();
  *nanoseconds_ +=
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
}

void TimedCommunicator::all_gather(const Tensor& input, Tensor& output, int dim) {
  timed([&] { inner_->all_gather(input, output, dim); });
}

void TimedCommunicator::all_to_all(const Tensor& input, Tensor& output, int dim) {
  timed([&] { inner_->all_to_all(input, output, dim); });
}

void TimedCommunicator::reduce_scatter(const Tensor& input, Tensor& output, int dim) {
  timed([&] { inner_->reduce_scatter(input, output, dim); });
}

void TimedCommunicator::all_reduce(Tensor& tensor) {
  timed([&] { inner_->all_reduce(tensor); });
}

void TimedCommunicator::broadcast(Tensor& tensor, int root) {
  timed([&] { inner_->broadcast(tensor, root); });
}

void TimedCommunicator::broadcast_bytes(std::vector<uint8_t>& bytes, int root) {
  timed([&] { inner_->broadcast_bytes(bytes, root); });
}

void TimedCommunicator::barrier() {
  timed([&] { inner_->barrier(); });
}

std::unique_ptr<Communicator> TimedCommunicator::split(int color, int key) {
  return std::make_unique<TimedCommunicator>(inner_->split(color, key), nanoseconds_);
}

}  // namespace ctxpar
