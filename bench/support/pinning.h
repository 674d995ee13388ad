// Internal to the bench ceilings: pinning worker threads to CPUs of their own, so two workers
// never share a core while the machine is shared.
#pragma once

#include <vector>

namespace ctxpar::bench::detail {

// The CPUs this process may run on, in order.
std::vector<int> allowed_cpus();
// Pins the calling thread to `cpu`; false if the OS refused.
bool pin_to(int cpu);

}  // namespace ctxpar::bench::detail
