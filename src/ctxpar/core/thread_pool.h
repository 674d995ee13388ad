// A fixed set of worker threads that runs parallel loops for one rank. Ranks that are threads
// of one process each own a pool, so the thread count is per rank, never global.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ctxpar {

class ThreadPool {
 public:
  // num_threads >= 1 counts the calling thread: a pool of 1 runs everything inline.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return num_threads_; }

  // Runs fn(task, thread_index) for task in [0, num_tasks), tasks handed out dynamically so
  // uneven tasks balance. thread_index < num_threads() lets callers keep per-thread scratch.
  // Blocks until all tasks are done; the first exception thrown by a task is rethrown here.
  // Not reentrant: fn must not call run() on the same pool.
  void run(int64_t num_tasks, const std::function<void(int64_t task, int thread)>& fn);

  // Splits [0, n) into contiguous ranges of at least min_grain (the last may be shorter) and
  // calls fn(begin, end, thread) once per range: with several threads and room for it, one
  // large range per thread, then the last quarter of [0, n) in small ranges that go to
  // whichever thread is free.
  void parallel_for(int64_t n, int64_t min_grain,
                    const std::function<void(int64_t begin, int64_t end, int thread)>& fn);

 private:
  void worker_loop(int thread_index);
  void work(int thread_index);

  int num_threads_;
  std::vector<std::thread> workers_;

  // A decode step runs hundreds of short loops; waking a sleeping worker through the condition
  // variable costs ~40 µs on these VMs, more than many loops take. So workers spin on
  // generation_ for a short while after each loop (yielding the core as they do, for ranks that
  // share cores) and sleep on wake_ only when no loop came; run() notifies only if one sleeps.
  // run() waits for the workers the same way: it spins, then sleeps on done_ (a worker's long
  // task must not keep the calling thread spinning), and the last worker notifies if it sleeps.
  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> caller_sleeps_{false};
  std::atomic<int> active_{0};  // workers still in the current loop
  std::atomic<bool> stop_{false};

  // Current job, written before generation_ is bumped.
  const std::function<void(int64_t, int)>* fn_ = nullptr;
  int64_t num_tasks_ = 0;
  std::atomic<int64_t> next_task_{0};
  std::exception_ptr error_;  // guarded by mu_
};

// Threads per rank when the user does not say: the cores this process may run on (its CPU
// affinity, which mpirun's binding and cgroup cpusets narrow) shared among `ranks_sharing`
// ranks (the ranks of this process, or the MPI ranks of this host), at least 1.
int default_threads_per_rank(int ranks_sharing);

}  // namespace ctxpar
