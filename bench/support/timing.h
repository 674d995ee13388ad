// Timing for the benchmarks: the wall time of a call and the calling thread's CPU time beside
// it. On a machine that other processes share, the CPU time shows the code's own speed when
// the call runs on the calling thread only (one thread); with more threads only the wall time
// means anything.
#pragma once

#include <time.h>

#include <algorithm>
#include <chrono>

namespace ctxpar::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

inline double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Wall and calling-thread CPU seconds.
struct Timing {
  double wall = 0;
  double cpu = 0;
};

template <class Fn>
Timing timed(Fn&& fn) {
  const auto t0 = Clock::now();
  const double c0 = thread_cpu_seconds();
  fn();
  return {seconds_since(t0), thread_cpu_seconds() - c0};
}

// Best rates (units per second) over several timed calls.
struct Rates {
  double wall = 0;
  double cpu = 0;
  void add(double units, const Timing& t) {
    wall = std::max(wall, units / t.wall);
    cpu = std::max(cpu, units / t.cpu);
  }
};

}  // namespace ctxpar::bench
