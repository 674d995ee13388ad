#include "ctxpar/comm/mpi_session.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>

#include "ctxpar/core/error.h"

namespace ctxpar {
namespace {

int g_ranks_on_this_host = 1;

// Ranks sharing this host's memory: the processes a default thread count divides the cores
// among. Collective over MPI_COMM_WORLD, so it runs once, right after MPI_Init.
int count_ranks_on_this_host() {
  MPI_Comm local = MPI_COMM_NULL;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) !=
      MPI_SUCCESS)
    return 1;
  int size = 1;
  MPI_Comm_size(local, &size);
  MPI_Comm_free(&local);
  return size;
}

}  // namespace

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
  g_ranks_on_this_host = count_ranks_on_this_host();
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

int mpi_world_rank() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return -1;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

int mpi_ranks_on_this_host() {
  return g_ranks_on_this_host;
}

int run_or_abort_mpi(const std::function<int()>& body, const char* prefix) {
  std::string message;
  int status = 3;
  try {
    return body();
  } catch (const InputError& e) {
    message = e.what();
    status = 2;
  } catch (const std::bad_alloc&) {
    message = "out of memory (std::bad_alloc)";
  } catch (const std::exception& e) {
    message = e.what();
  } catch (...) {
    message = "an exception not derived from std::exception";
  }
  const int rank = mpi_world_rank();
  std::fprintf(stderr, "%srank %d: %s\n", prefix, rank, message.c_str());
  std::fflush(stderr);
  // Without MPI there is no job to abort; exiting non-zero still makes mpirun stop the rest.
  if (rank >= 0) MPI_Abort(MPI_COMM_WORLD, status);
  std::exit(status);
}

}  // namespace ctxpar
