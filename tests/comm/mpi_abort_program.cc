// Helper for the MPI abort test: rank 1 throws while the others wait in a barrier.
// run_or_abort_mpi must print "rank 1: <message>" and take the whole job down.
#include "ctxpar/comm/mpi_communicator.h"
#include "ctxpar/comm/mpi_session.h"
#include "ctxpar/core/error.h"

int main(int argc, char** argv) {
  ctxpar::MpiSession session(&argc, &argv);
  return ctxpar::run_or_abort_mpi([] {
    auto world = ctxpar::MpiCommunicator::world();
    if (world->rank() == 1) throw ctxpar::Error("deliberate failure on rank 1");
    world->barrier();  // never completes: rank 1 is gone
    return 0;
  });
}
