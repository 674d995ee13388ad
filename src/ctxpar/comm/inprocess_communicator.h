// In-process backend: ranks are threads of one process and exchange data through shared
// memory. Each rank publishes pointers to its arguments and reads the other ranks' tensors
// directly, so a collective costs two group-wide syncs plus the copies (or sums) of the
// bytes it must produce; no staging buffers, no threads created per call. Sums add the
// ranks' values in rank order, so results are bit-identical from run to run.
//
// Failure model: when a rank's function throws, the whole world fails: every collective
// that is waiting, or is called later, on the world or on any group split from it, throws an
// Error saying the group was aborted because rank r failed. A collective whose ranks pass
// different kinds, dtypes, shapes, dims or roots throws the same Error on every rank of the
// group, naming the rank that differs. A collective that can never complete (a member has
// returned, or every remaining rank waits on something no one will join) throws instead of
// hanging.
#pragma once

#include <functional>

#include "ctxpar/comm/communicator.h"

namespace ctxpar {

// Runs fn on world_size threads (world_size >= 1), each with its own world communicator of
// rank 0..world_size-1, and joins them. Rethrows the first exception a rank raised (the
// original one, not the "aborted" errors it caused on the other ranks). Communicators
// handed to fn, and those split from them, are used by their rank's thread only.
void run_inprocess_ranks(int world_size, const std::function<void(Communicator& world)>& fn);

}  // namespace ctxpar
