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

// Runs body and returns its exit status. If it throws, prints "rank r: <message>" to stderr
// and calls MPI_Abort (exit status 2), so the whole job stops instead of the other ranks
// hanging in their next collective. If MPI is not (or no longer) initialized it prints the
// same line and exits with status 2.
int run_or_abort_mpi(const std::function<int()>& body);

}  // namespace ctxpar
