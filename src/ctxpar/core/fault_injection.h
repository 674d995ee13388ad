// Test-only fault injection: makes exactly one rank fail at a chosen point, so the tests of
// the failure paths (one failing rank ends the whole job with its message, in-process and
// under mpirun) can prove them. Nothing sets it outside those tests.
//
//   CTXPAR_TEST_FAULT=<point>:<rank>[:<step>]
//     startup  while the rank validates its configuration (a value only this rank sees)
//     load     while the rank loads its weights (an unreadable shard)
//     oom      while the rank loads its weights, as std::bad_alloc (out of memory)
//     decode   at the rank's <step>-th forward pass (0-based; default 0)
//     sampler  in rank 0's sampler at its <step>-th call
//
// The variable is parsed once; when it is unset each check is one branch. A malformed value
// is an InputError naming it.
#pragma once

#include <cstdint>

namespace ctxpar {

enum class FaultPoint : uint8_t { kStartup, kLoad, kOutOfMemory, kDecode, kSampler };

// Throws the requested fault when CTXPAR_TEST_FAULT names this point, this rank and (for
// decode and sampler) this step: an InputError for startup, std::bad_alloc for oom, an
// Error otherwise. The message says it was injected.
void inject_test_fault(FaultPoint point, int rank, int64_t step = 0);

}  // namespace ctxpar
