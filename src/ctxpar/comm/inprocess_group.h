// Shared state of the in-process backend (internal to comm/): the World every rank thread
// of one launch shares, and one Group per communicator (the world group and each split).
//
// A collective is: publish what this rank passes in its Slot, sync (everyone has published),
// read the other ranks' Slots directly, sync again (nobody reads any more). Slots are double
// buffered by collective number so a barrier needs only the first sync.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "ctxpar/comm/collective_check.h"
#include "ctxpar/core/tensor.h"

namespace ctxpar::inprocess {

class Group;

// What one rank publishes for its current collective. Pointers are to the caller's
// arguments and stay valid until the collective's last sync.
struct alignas(64) Slot {
  CollectiveSignature signature;
  const Tensor* input = nullptr;
  Tensor* output = nullptr;  // also the in-place tensor of all_reduce and broadcast
  std::vector<uint8_t>* bytes = nullptr;
  int color = 0;
  int key = 0;
  std::shared_ptr<Group> created;  // split: the group the leader of a color made
};

// State shared by all rank threads of one launch: failure, who has returned, and the
// bookkeeping that turns a deadlock into an error.
class World {
 public:
  explicit World(int size);

  int size() const { return size_; }
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }

  // Creates and registers a group; members are world ranks in group-rank order.
  std::shared_ptr<Group> make_group(std::vector<int> members, std::shared_ptr<World> self);

  // Records the first failure (later ones are ignored) and wakes every waiting rank, whose
  // collective then throws. rank -1 means the launcher itself.
  void fail(int rank, std::exception_ptr error, const std::string& message);
  // A rank's function returned (normally or by throwing); collectives that still wait for it
  // can never complete, so they throw.
  void rank_returned(int rank);
  std::exception_ptr first_error() const;

  // Throws "<op>: group aborted because rank r failed: <message>".
  [[noreturn]] void throw_aborted(std::string_view op) const;

  // How a waiting rank busy-waits before it sleeps: it spins for at most spin_ns, then
  // yields its core, for a budget of at most busy_ns in all (each rank adapts its budget
  // below that cap). Defaults depend on the ratio of ranks to cores;
  // CTXPAR_INPROCESS_SPIN_US and CTXPAR_INPROCESS_BUSY_US override them.
  int64_t spin_ns() const { return spin_ns_; }
  int64_t busy_ns() const { return busy_ns_; }
  bool oversubscribed() const { return oversubscribed_; }  // more ranks than cores

 private:
  friend class Group;

  struct Waiting {
    const Group* group = nullptr;
    std::string_view op;
    uint64_t seq = 0;
    uint32_t generation = 0;
  };

  void notify_all_groups();  // caller holds mu_
  // True when every rank that has not returned sleeps in a sync that is not released: no
  // one is left to arrive anywhere. Caller holds mu_.
  bool all_ranks_blocked() const;
  std::string describe_deadlock() const;  // caller holds mu_

  const int size_;
  bool oversubscribed_ = false;
  int64_t spin_ns_ = 0;
  int64_t busy_ns_ = 0;
  std::atomic<bool> aborted_{false};

  mutable std::mutex mu_;  // guards everything below; also the mutex of every Group's cv
  int failed_rank_ = -1;
  std::string failure_message_;
  std::exception_ptr first_error_;
  std::vector<bool> returned_;
  std::vector<Waiting> waiting_;  // per world rank: the sync it sleeps in, set by itself
  std::vector<std::weak_ptr<Group>> groups_;
};

class Group {
 public:
  Group(std::shared_ptr<World> world, std::vector<int> members);

  int size() const { return static_cast<int>(members_.size()); }
  const std::vector<int>& members() const { return members_; }
  World& world() const { return *world_; }
  // The slot group rank r uses for collective number seq.
  Slot& slot(int group_rank, uint64_t seq) { return slots_[2 * group_rank + (seq & 1)]; }
  std::string describe() const;  // "group of world ranks [0, 1, 2]"

  // Whether a sync gives up when the world is aborted. A collective's first sync does:
  // the rank withdraws its arrival, so the sync can never complete without it and nobody
  // reads its arguments. Once that sync has completed, peers may be reading this rank's
  // tensors, so the closing sync ignores aborts: every member of a started collective
  // reaches it, and only then may anyone unwind.
  enum class OnAbort { kThrow, kFinish };

  // Returns once every member has called sync the same number of times. Throws an Error
  // when the world is aborted (kThrow only), when a member has returned without arriving,
  // or when every rank that has not returned is waiting (a deadlock); in those cases this
  // rank's arrival is withdrawn first. op and seq only label messages.
  void sync(int group_rank, std::string_view op, uint64_t seq, OnAbort on_abort);

 private:
  friend class World;

  // state_ packs the generation (high 32 bits) and how many members have arrived in it
  // (low 32 bits), so arriving, releasing and withdrawing are single atomic operations.
  static uint32_t generation_of(uint64_t state) { return static_cast<uint32_t>(state >> 32); }
  static uint32_t arrived_of(uint64_t state) { return static_cast<uint32_t>(state); }
  bool released(uint32_t generation) const {
    return generation_of(state_.load(std::memory_order_acquire)) != generation;
  }
  // Takes back this rank's arrival unless the sync is complete (everyone arrived): true if
  // withdrawn; false means the sync is released or about to be, and the caller must finish.
  bool try_withdraw(uint32_t generation);

  void wait(uint32_t generation, int group_rank, std::string_view op, uint64_t seq,
            OnAbort on_abort);
  void sleep(uint32_t generation, int group_rank, std::string_view op, uint64_t seq,
             OnAbort on_abort);
  int first_returned_member() const;  // caller holds world mu_; -1 if none

  std::shared_ptr<World> world_;
  std::vector<int> members_;
  std::vector<Slot> slots_;  // [member][2]

  // Per member: how long it busy-waits before sleeping. Doubles (up to the world's cap)
  // when a wait ended while busy, halves when the member had to sleep, so ranks spin when
  // peers answer quickly and sleep when cores are oversubscribed or peers are slow. With a
  // core per rank, a wait that slept but was released within the cap doubles it too: a
  // budget that once fell below the usual short wait would otherwise stay there.
  struct alignas(64) BusyBudget {
    int64_t ns = 0;
  };
  std::vector<BusyBudget> busy_budget_;

  alignas(64) std::atomic<uint64_t> state_{0};
  // When the last sync was released (now_ns), written before its generation is.
  std::atomic<int64_t> release_ns_{0};
  // Ranks in the sleeping path; lets a releaser skip the lock and notify when it is zero.
  alignas(64) std::atomic<int> sleepers_{0};
  std::condition_variable cv_;
};

}  // namespace ctxpar::inprocess
