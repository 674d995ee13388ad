// A random seed drawn by rank 0 and broadcast, so every rank of a multi-process test builds
// the same inputs.
#pragma once

#include <cstdint>

#include "ctxpar/comm/communicator.h"

namespace ctxpar::test_support {

uint32_t shared_seed(Communicator& world);

}  // namespace ctxpar::test_support
