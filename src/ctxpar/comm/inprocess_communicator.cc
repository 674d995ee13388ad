#include "ctxpar/comm/inprocess_communicator.h"

#include <algorithm>
#include <numeric>
#include <thread>

#include "ctxpar/comm/collective_check.h"
#include "ctxpar/comm/inprocess_group.h"
#include "ctxpar/comm/strided_walk.h"
#include "ctxpar/comm/tensor_sum.h"
#include "ctxpar/core/error.h"

namespace ctxpar {
namespace {

using inprocess::Group;
using inprocess::Slot;
using inprocess::World;

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<World> world, std::shared_ptr<Group> group, int rank)
      : world_(std::move(world)),
        group_(std::move(group)),
        rank_(rank),
        signatures_(group_->size()),
        views_(group_->size()),
        operands_(group_->size()) {}

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  std::string backend_name() const override { return "inprocess"; }

  void all_gather(const Tensor& input, Tensor& output, int dim) override {
    const int d = check_all_gather_args(input, output, dim, size());
    Slot& me = begin(tensor_signature(CollectiveKind::kAllGather, input, d));
    me.input = &input;
    enter();
    exchange([&] {
      const int64_t chunk = input.size(d);
      for (int i = 0; i < size(); ++i) {
        strided_copy(*peer(i).input, slice_view(output, d, i * chunk, (i + 1) * chunk));
      }
    });
  }

  void all_to_all(const Tensor& input, Tensor& output, int dim) override {
    const int d = check_all_to_all_args(input, output, dim, size());
    Slot& me = begin(tensor_signature(CollectiveKind::kAllToAll, input, d));
    me.input = &input;
    enter();
    exchange([&] {
      // Our chunk i of output is chunk rank() of rank i's input.
      const int64_t chunk = input.size(d) / size();
      for (int i = 0; i < size(); ++i) {
        strided_copy(slice_view(*peer(i).input, d, rank_ * chunk, (rank_ + 1) * chunk),
                     slice_view(output, d, i * chunk, (i + 1) * chunk));
      }
    });
  }

  void reduce_scatter(const Tensor& input, Tensor& output, int dim) override {
    const int d = check_reduce_scatter_args(input, output, dim, size());
    Slot& me = begin(tensor_signature(CollectiveKind::kReduceScatter, input, d));
    me.input = &input;
    enter();
    exchange([&] {
      // Each rank sums only its own chunk, reading it straight from every rank's input.
      const int64_t chunk = output.size(d);
      for (int i = 0; i < size(); ++i) {
        views_[i] = slice_view(*peer(i).input, d, rank_ * chunk, (rank_ + 1) * chunk);
        operands_[i] = &views_[i];
      }
      const Tensor* out[] = {&output};
      sum_tensors(operands_, out, 0, output.numel());
    });
  }

  void all_reduce(Tensor& tensor) override {
    check_summable("all_reduce", tensor.dtype());
    Slot& me = begin(tensor_signature(CollectiveKind::kAllReduce, tensor));
    me.output = &tensor;
    enter();
    exchange([&] {
      // Rank r sums flat elements [r*n/size, (r+1)*n/size) of every rank's tensor and writes
      // the sum back into all of them; no other rank touches that range, so no scratch.
      for (int i = 0; i < size(); ++i) operands_[i] = peer(i).output;
      const int64_t n = tensor.numel();
      sum_tensors(operands_, operands_, n * rank_ / size(), n * (rank_ + 1) / size());
    });
  }

  void broadcast(Tensor& tensor, int root) override {
    check_root("broadcast", root, size());
    Slot& me = begin(tensor_signature(CollectiveKind::kBroadcast, tensor, 0, root));
    me.output = &tensor;
    enter();
    exchange([&] {
      if (rank_ != root) strided_copy(*peer(root).output, tensor);
    });
  }

  void broadcast_bytes(std::vector<uint8_t>& bytes, int root) override {
    check_root("broadcast_bytes", root, size());
    CollectiveSignature signature;
    signature.kind = CollectiveKind::kBroadcastBytes;
    signature.root = root;
    Slot& me = begin(signature);
    me.bytes = &bytes;
    enter();
    exchange([&] {
      if (rank_ != root) bytes = *peer(root).bytes;
    });
  }

  void barrier() override {
    CollectiveSignature signature;
    signature.kind = CollectiveKind::kBarrier;
    begin(signature);
    enter();  // slots are double buffered, so nobody can overwrite what we compared
  }

  std::unique_ptr<Communicator> split(int color, int key) override {
    CTXPAR_CHECK(color >= 0, "split: color {} is negative; colors must be >= 0", color);
    CollectiveSignature signature;
    signature.kind = CollectiveKind::kSplit;
    Slot& me = begin(signature);
    me.color = color;
    me.key = key;
    me.created.reset();
    enter();
    std::vector<std::pair<int, int>> order;  // (key, parent rank) of our color's members
    for (int i = 0; i < size(); ++i) {
      if (peer(i).color == color) order.emplace_back(peer(i).key, i);
    }
    std::sort(order.begin(), order.end());
    std::vector<int> members;
    int new_rank = -1;
    for (const auto& entry : order) {
      if (entry.second == rank_) new_rank = static_cast<int>(members.size());
      members.push_back(group_->members()[entry.second]);
    }
    // The first member in the new order creates the group; the others pick it up after the
    // second sync. Slots live in the group (not on a caller's stack) and this one is not
    // reused before the collective after next, so this sync may give up on an abort.
    const int leader = order.front().second;
    if (leader == rank_) me.created = world_->make_group(std::move(members), world_);
    group_->sync(rank_, "split", seq_, Group::OnAbort::kThrow);
    return std::make_unique<InProcessCommunicator>(world_, peer(leader).created, new_rank);
  }

 private:
  Slot& begin(const CollectiveSignature& signature) {
    if (world_->aborted()) world_->throw_aborted(collective_name(signature.kind));
    ++seq_;
    op_ = collective_name(signature.kind);
    Slot& me = group_->slot(rank_, seq_);
    me.signature = signature;
    return me;
  }

  // First sync, then every rank compares all signatures; on a mismatch all ranks sync once
  // more (so no one frees a tensor another is still describing) and throw the same Error.
  void enter() {
    group_->sync(rank_, op_, seq_, Group::OnAbort::kThrow);
    for (int i = 0; i < size(); ++i) signatures_[i] = peer(i).signature;
    const std::string mismatch = find_signature_mismatch(signatures_);
    if (!mismatch.empty()) {
      group_->sync(rank_, op_, seq_, Group::OnAbort::kFinish);
      CTXPAR_FAIL("{} (collective #{} of {})", mismatch, seq_, group_->describe());
    }
  }

  // The data phase of a collective whose first sync has completed: peers may read our
  // arguments until the closing sync, so we reach it even when the body throws.
  template <typename Body>
  void exchange(Body&& body) {
    try {
      body();
    } catch (...) {
      leave();
      throw;
    }
    leave();
  }

  void leave() { group_->sync(rank_, op_, seq_, Group::OnAbort::kFinish); }

  Slot& peer(int group_rank) { return group_->slot(group_rank, seq_); }

  std::shared_ptr<World> world_;
  std::shared_ptr<Group> group_;
  const int rank_;
  uint64_t seq_ = 0;
  std::string_view op_;
  // Per-call scratch sized once, so steady-state collectives do not allocate for them.
  std::vector<CollectiveSignature> signatures_;
  std::vector<Tensor> views_;
  std::vector<const Tensor*> operands_;
};

}  // namespace

void run_inprocess_ranks(int world_size, const std::function<void(Communicator& world)>& fn) {
  CTXPAR_CHECK(world_size >= 1 && world_size <= 4096,
               "run_inprocess_ranks: world size {} is out of range (valid: 1..4096)", world_size);
  auto world = std::make_shared<World>(world_size);
  std::vector<int> members(world_size);
  std::iota(members.begin(), members.end(), 0);
  auto group = world->make_group(std::move(members), world);

  auto rank_main = [&](int rank) {
    try {
      InProcessCommunicator comm(world, group, rank);
      fn(comm);
    } catch (const std::exception& e) {
      world->fail(rank, std::current_exception(), e.what());
    } catch (...) {
      world->fail(rank, std::current_exception(), "an exception not derived from std::exception");
    }
    world->rank_returned(rank);
  };

  std::vector<std::thread> threads;
  threads.reserve(world_size);
  try {
    for (int r = 0; r < world_size; ++r) threads.emplace_back(rank_main, r);
  } catch (const std::exception& e) {
    // Ranks already running must not wait forever for the ones that never started.
    world->fail(-1, std::current_exception(),
                fmt::format("could not start rank thread {} of {}: {}", threads.size(), world_size,
                            e.what()));
  }
  for (auto& t : threads) t.join();
  if (auto error = world->first_error()) std::rethrow_exception(error);
}

}  // namespace ctxpar
