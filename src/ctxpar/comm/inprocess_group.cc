#include "ctxpar/comm/inprocess_group.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "ctxpar/core/error.h"

namespace ctxpar::inprocess {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t microseconds_from_env(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long us = std::strtoll(v, &end, 10);
  CTXPAR_CHECK(end != v && *end == '\0' && us >= 0,
               "{}={} is not a valid number of microseconds (a non-negative integer)", name, v);
  return us;
}

std::string ranks_str(const std::vector<int>& ranks) {
  std::string s = "[";
  for (size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s + "]";
}

}  // namespace

World::World(int size) : size_(size), returned_(size, false), waiting_(size) {
  // With a core per rank, spinning answers fastest. With more ranks than cores a spinning
  // rank steals the core the rank it waits for needs, so it yields almost at once. Either
  // way a waiter sleeps after a while, since the cores may be busy with other work.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  oversubscribed_ = size > cores;
  spin_ns_ = 1000 * microseconds_from_env("CTXPAR_INPROCESS_SPIN_US", oversubscribed_ ? 1 : 50);
  busy_ns_ = 1000 * microseconds_from_env("CTXPAR_INPROCESS_BUSY_US", 200);
}

std::shared_ptr<Group> World::make_group(std::vector<int> members, std::shared_ptr<World> self) {
  auto group = std::make_shared<Group>(std::move(self), std::move(members));
  std::lock_guard lock(mu_);
  std::erase_if(groups_, [](const std::weak_ptr<Group>& g) { return g.expired(); });
  groups_.push_back(group);
  return group;
}

void World::fail(int rank, std::exception_ptr error, const std::string& message) {
  std::lock_guard lock(mu_);
  if (!aborted_.load(std::memory_order_relaxed)) {
    failed_rank_ = rank;
    failure_message_ = message;
    first_error_ = std::move(error);
    aborted_.store(true, std::memory_order_release);
  }
  notify_all_groups();
}

void World::rank_returned(int rank) {
  std::lock_guard lock(mu_);
  returned_[rank] = true;
  notify_all_groups();
}

std::exception_ptr World::first_error() const {
  std::lock_guard lock(mu_);
  return first_error_;
}

void World::throw_aborted(std::string_view op) const {
  std::string message;
  int rank = -1;
  {
    std::lock_guard lock(mu_);
    message = failure_message_;
    rank = failed_rank_;
  }
  if (rank < 0) CTXPAR_FAIL("{}: group aborted because the launcher failed: {}", op, message);
  CTXPAR_FAIL("{}: group aborted because rank {} failed: {}", op, rank, message);
}

void World::notify_all_groups() {
  for (const auto& weak : groups_) {
    if (auto g = weak.lock()) g->cv_.notify_all();
  }
}

bool World::all_ranks_blocked() const {
  for (int r = 0; r < size_; ++r) {
    if (returned_[r]) continue;
    const Waiting& w = waiting_[r];
    if (w.group == nullptr || w.group->released(w.generation)) return false;
  }
  return true;
}

std::string World::describe_deadlock() const {
  std::string s =
      "deadlock: every rank that has not returned waits in a collective that cannot complete "
      "(ranks must call the collectives of each group in the same order):";
  for (int r = 0; r < size_; ++r) {
    const Waiting& w = waiting_[r];
    if (w.group == nullptr || w.group->released(w.generation)) continue;
    s += fmt::format(" rank {} waits in {} #{} of {};", r, w.op, w.seq, w.group->describe());
  }
  std::vector<int> returned;
  for (int r = 0; r < size_; ++r) {
    if (returned_[r]) returned.push_back(r);
  }
  if (!returned.empty()) s += fmt::format(" ranks {} have returned", ranks_str(returned));
  return s;
}

Group::Group(std::shared_ptr<World> world, std::vector<int> members)
    : world_(std::move(world)),
      members_(std::move(members)),
      slots_(2 * members_.size()),
      busy_budget_(members_.size(), BusyBudget{world_->busy_ns()}) {}

std::string Group::describe() const {
  return "group of world ranks " + ranks_str(members_);
}

void Group::sync(int group_rank, std::string_view op, uint64_t seq, OnAbort on_abort) {
  if (on_abort == OnAbort::kThrow && world_->aborted()) world_->throw_aborted(op);
  // acq_rel: the last arriver sees every member's Slot; its release of the new generation
  // passes them on to the waiters.
  const uint64_t before = state_.fetch_add(1, std::memory_order_acq_rel);
  const uint32_t generation = generation_of(before);
  if (arrived_of(before) + 1 == static_cast<uint32_t>(size())) {
    release_ns_.store(now_ns(), std::memory_order_relaxed);
    // seq_cst pairs with the sleeper's increment of sleepers_ before it rechecks state_:
    // either we see the sleeper here, or it sees the new generation.
    state_.store(static_cast<uint64_t>(generation + 1) << 32, std::memory_order_seq_cst);
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      // Taking the lock orders the store before any sleeper's check-then-wait, so the
      // notification cannot fall between them.
      { std::lock_guard lock(world_->mu_); }
      cv_.notify_all();
    }
    return;
  }
  wait(generation, group_rank, op, seq, on_abort);
}

bool Group::try_withdraw(uint32_t generation) {
  uint64_t state = state_.load(std::memory_order_acquire);
  while (true) {
    if (generation_of(state) != generation) return false;
    if (arrived_of(state) == static_cast<uint32_t>(size())) return false;  // being released
    if (state_.compare_exchange_weak(state, state - 1, std::memory_order_acq_rel)) return true;
  }
}

void Group::wait(uint32_t generation, int group_rank, std::string_view op, uint64_t seq,
                 OnAbort on_abort) {
  int64_t& budget = busy_budget_[group_rank].ns;
  const int64_t spin = std::min(budget, world_->spin_ns());
  const int64_t start = now_ns();
  auto busy_paid_off = [&] {
    budget = std::min(world_->busy_ns(), std::max<int64_t>(2 * budget, 1000));
  };
  // An abort seen while busy goes to sleep(), which withdraws under the lock.
  auto give_up = [&] { return on_abort == OnAbort::kThrow && world_->aborted(); };
  for (int i = 1;; ++i) {
    if (released(generation)) return busy_paid_off();
    if ((i & 63) == 0) {
      if (give_up()) return sleep(generation, group_rank, op, seq, on_abort);
      if (now_ns() - start >= spin) break;
    }
    cpu_relax();
  }
  while (now_ns() - start < budget) {
    if (released(generation)) return busy_paid_off();
    if (give_up()) return sleep(generation, group_rank, op, seq, on_abort);
    std::this_thread::yield();
  }
  sleep(generation, group_rank, op, seq, on_abort);
  // With a core per rank, a wait that would have ended within the cap says spinning pays
  // (the release is ordered before sleep() saw it, so this is our sync's). With more ranks
  // than cores every yield may hand the core to another rank for a time slice: sleeping at
  // once is best there, so any sleep halves the budget.
  if (!world_->oversubscribed() &&
      release_ns_.load(std::memory_order_relaxed) - start <= world_->busy_ns()) {
    busy_paid_off();
  } else {
    budget /= 2;
  }
}

void Group::sleep(uint32_t generation, int group_rank, std::string_view op, uint64_t seq,
                  OnAbort on_abort) {
  World& w = *world_;
  const int world_rank = members_[group_rank];
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  struct LeaveSleepers {
    std::atomic<int>& count;
    ~LeaveSleepers() { count.fetch_sub(1, std::memory_order_seq_cst); }
  } leave{sleepers_};

  std::unique_lock lock(w.mu_);
  // Our entry in waiting_ tells the deadlock check where we sleep. Only we set or clear it,
  // always under the lock, on both ways out.
  w.waiting_[world_rank] = {this, op, seq, generation};
  while (true) {
    if (released(generation)) {
      w.waiting_[world_rank] = {};
      return;
    }
    // Why this sync can never complete, if it cannot.
    std::string failure;
    const bool aborted = on_abort == OnAbort::kThrow && w.aborted_.load(std::memory_order_relaxed);
    if (!aborted) {
      if (const int r = first_returned_member(); r >= 0) {
        failure = fmt::format(
            "{} #{} of {}: rank {} returned from its rank function without joining this "
            "collective (every rank of a group must call the same collectives)",
            op, seq, describe(), r);
      } else if (w.all_ranks_blocked()) {
        failure = w.describe_deadlock();
      }
    }
    // Either nothing is wrong, or the sync completed under us and its release is on the
    // way; otherwise withdraw our arrival and give up.
    if ((aborted || !failure.empty()) && try_withdraw(generation)) {
      w.waiting_[world_rank] = {};
      lock.unlock();
      if (aborted) w.throw_aborted(op);
      CTXPAR_FAIL("{}", failure);
    }
    cv_.wait(lock);
  }
}

int Group::first_returned_member() const {
  for (int m : members_) {
    if (world_->returned_[m]) return m;
  }
  return -1;
}

}  // namespace ctxpar::inprocess
