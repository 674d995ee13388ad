#include "pinning.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <thread>

namespace ctxpar::bench::detail {

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  return cpus;
}

bool pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

std::vector<int> one_thread_and_every_core() {
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return cores > 1 ? std::vector<int>{1, cores} : std::vector<int>{1};
}

}  // namespace ctxpar::bench::detail
