// Process-level MPI plumbing: initialization, detection of mpirun, and turning an uncaught
// error into an aborted job that says which rank failed and why.
#pragma once

#include <functional>

namespace ctxpar {

// Initializes MPI for the lifetime of the object, asking for MPI_THREAD_MULTIPLE and
// accepting whatever level the library provides. If MPI is already initialized it is left
// alone (and not finalized by this object). Not copyable.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  MpiSession() : MpiSession(nullptr, nullptr) {}
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  // The MPI_THREAD_* level provided; collectives of one communicator must stay on one thread
  // unless this is MPI_THREAD_MULTIPLE.
  int thread_level() const { return thread_level_; }
  bool thread_multiple() const;
  int world_rank() const;
  int world_size() const;

 private:
  bool owns_init_ = false;
  int thread_level_ = 0;
};

// True when this process was started by mpirun/mpiexec (Open MPI, or a PMI/PMIx launcher).
bool launched_by_mpirun();

// This process's rank in MPI_COMM_WORLD, or -1 when MPI is not initialized (not under
// mpirun, or before the MpiSession). Not a collective.
int mpi_world_rank();

// How many ranks of MPI_COMM_WORLD run on this host (MPI_COMM_TYPE_SHARED), as found when the
// first MpiSession initialized MPI; 1 when MPI was never initialized. Not a collective.
int mpi_ranks_on_this_host();

// Runs body and returns its exit status. If it throws, prints "<prefix>rank r: <message>" to
// stderr and calls MPI_Abort, so the whole job stops within seconds instead of the other
// ranks hanging in their next collective; the job's exit status is 2 for an InputError and 3
// for anything else. If MPI is not (or no longer) initialized it prints the same line and
// exits with that status. A GroupFailure (every rank has it) must be handled inside body.
int run_or_abort_mpi(const std::function<int()>& body, const char* prefix = "");

}  // namespace ctxpar
