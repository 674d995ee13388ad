#include "ctxpar/comm/mpi_session.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

#include "ctxpar/core/error.h"

namespace ctxpar {

MpiSession::MpiSession(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) {
    MPI_Query_thread(&thread_level_);
    return;
  }
  const int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &thread_level_);
  CTXPAR_CHECK(rc == MPI_SUCCESS, "MPI_Init_thread failed with code {}", rc);
  owns_init_ = true;
}

MpiSession::~MpiSession() {
  if (!owns_init_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

bool MpiSession::thread_multiple() const {
  return thread_level_ == MPI_THREAD_MULTIPLE;
}

int MpiSession::world_rank() const {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int MpiSession::world_size() const {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

bool launched_by_mpirun() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"}) {
    if (std::getenv(var) != nullptr) return true;
  }
  return false;
}

int run_or_abort_mpi(const std::function<int()>& body) {
  const char* message = nullptr;
  std::string what;
  try {
    return body();
  } catch (const std::exception& e) {
    what = e.what();
    message = what.c_str();
  } catch (...) {
    message = "an exception not derived from std::exception";
  }
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  const bool usable = initialized && !finalized;
  int rank = -1;
  if (usable) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  } else if (const char* env = std::getenv("OMPI_COMM_WORLD_RANK")) {
    rank = std::atoi(env);
  }
  std::fprintf(stderr, "rank %d: %s\n", rank, message);
  std::fflush(stderr);
  // Without MPI there is no job to abort; exiting non-zero still makes mpirun stop the rest.
  if (usable) MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

}  // namespace ctxpar
