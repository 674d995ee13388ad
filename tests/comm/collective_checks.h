// Collective test bodies that run on any Communicator: in-process ranks and MPI processes
// call the same functions. Every rank regenerates every rank's input from the shared seed
// and checks its own output against a serial double-precision reference.
//
// Each function is collective: all ranks of comm call it with the same arguments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm_test_util.h"
#include "ctxpar/comm/communicator.h"

namespace ctxpar::testing {

struct CollectiveCase {
  DType dtype = DType::kF32;
  Shape chunk;  // one rank's chunk: all_gather's input, reduce_scatter's output
  int dim = 0;
  Layout input_layout = Layout::kContiguous;
  Layout output_layout = Layout::kContiguous;
  Values values = Values::kNormal;
  uint64_t seed = 0;
  std::string describe() const;
};

struct CheckOptions {
  // The in-process backend adds ranks in rank order, so its float sums must equal exactly
  // the f32 sum in that order (rounded once to bf16). MPI's order is its own: tolerance.
  bool rank_order_sums = false;
};

// count cases drawn from seed; the first 15 cover every dtype (f32, bf16, i32, i64, u8)
// with the first, a middle and the last dim; sizes are odd or zero now and then.
std::vector<CollectiveCase> make_cases(uint64_t seed, int count);

void check_all_gather(Communicator& comm, const CollectiveCase& c, uint8_t poison);
void check_all_to_all(Communicator& comm, const CollectiveCase& c, uint8_t poison);
void check_reduce_scatter(Communicator& comm, const CollectiveCase& c, uint8_t poison,
                          const CheckOptions& options);
void check_all_reduce(Communicator& comm, const CollectiveCase& c, const CheckOptions& options);
void check_broadcast(Communicator& comm, const CollectiveCase& c, uint8_t poison);
void check_broadcast_bytes(Communicator& comm, uint64_t seed);
// All of the above; the outputs are poisoned twice with different bytes, so an element
// that is never written cannot pass by matching the poison.
void check_every_collective(Communicator& comm, const CollectiveCase& c,
                            const CheckOptions& options);

// Splits comm several ways (TP/DCP shapes, reversed keys, singleton groups), checks each
// sub-group's membership and order, and runs collectives inside the sub-groups.
void check_split_groups(Communicator& comm, uint64_t seed, const CheckOptions& options);

// `iterations` rounds of small collectives drawn from seed on the world, TP, DCP and an
// odd/even group, with DCP groups doing different numbers of their own collectives between
// world ones. Every result is checked.
void run_interleaved_collectives(Communicator& world, int dcp_size, int iterations, uint64_t seed,
                                 const CheckOptions& options);

}  // namespace ctxpar::testing
