#include "ctxpar/core/thread_pool.h"

#include <sched.h>

#include <algorithm>

#include "ctxpar/core/error.h"

namespace ctxpar {

ThreadPool::ThreadPool(int num_threads) : num_threads_(num_threads) {
  CTXPAR_CHECK(num_threads >= 1, "thread pool size {} must be >= 1", num_threads);
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::work(int thread_index) {
  for (;;) {
    const int64_t task = next_task_.fetch_add(1);
    if (task >= num_tasks_) return;
    try {
      (*fn_)(task, thread_index);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      if (!error_) error_ = std::current_exception();
      next_task_.store(num_tasks_);  // stop handing out work
    }
  }
}

void ThreadPool::worker_loop(int thread_index) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    work(thread_index);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--active_ == 0) done_.notify_all();
    }
  }
}

void ThreadPool::run(int64_t num_tasks, const std::function<void(int64_t, int)>& fn) {
  if (num_tasks <= 0) return;
  if (num_threads_ == 1 || num_tasks == 1) {
    for (int64_t t = 0; t < num_tasks; ++t) fn(t, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    num_tasks_ = num_tasks;
    next_task_.store(0);
    error_ = nullptr;
    active_ = num_threads_ - 1;
    ++generation_;
  }
  wake_.notify_all();
  work(0);
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return active_ == 0; });
    fn_ = nullptr;
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

void ThreadPool::parallel_for(int64_t n, int64_t min_grain,
                              const std::function<void(int64_t, int64_t, int)>& fn) {
  if (n <= 0) return;
  const int64_t grain = std::max<int64_t>(1, min_grain);
  const int64_t max_chunks = (n + grain - 1) / grain;
  const int64_t chunks = std::min<int64_t>(max_chunks, static_cast<int64_t>(num_threads_) * 4);
  const int64_t per = (n + chunks - 1) / chunks;
  run((n + per - 1) / per, [&](int64_t c, int thread) {
    const int64_t b = c * per;
    fn(b, std::min(n, b + per), thread);
  });
}

int default_threads_per_rank(int ranks_sharing) {
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
    cores = std::min(cores, std::max(1, CPU_COUNT(&allowed)));
  }
  // A process bound to fewer cores than its share is already divided (mpirun's binding).
  const int share = std::max(
      1, static_cast<int>(std::thread::hardware_concurrency()) / std::max(1, ranks_sharing));
  return std::max(1, std::min(cores, share));
}

}  // namespace ctxpar
