// Internal to the bench ceilings: pinning worker threads to CPUs of their own, so two workers
// never share a core while the machine is shared; the thread counts the ceiling tools measure.
#pragma once

#include <vector>

namespace ctxpar::bench::detail {

// The CPUs this process may run on, in order.
std::vector<int> allowed_cpus();
// Pins the calling thread to `cpu`; false if the OS refused.
bool pin_to(int cpu);
// What read_ceiling and compute_ceiling measure when given no thread counts: {1, every core}
// ({1} on one core).
std::vector<int> one_thread_and_every_core();

}  // namespace ctxpar::bench::detail
