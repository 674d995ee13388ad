// MPI backend: ranks are processes started by mpirun. Every collective maps to one MPI
// collective (MPI_Allgather, MPI_Alltoall, MPI_Reduce_scatter, MPI_Allreduce, MPI_Bcast,
// MPI_Barrier, MPI_Comm_split). Chunks along a dim other than the outermost are packed into
// rank-major scratch first and unpacked after. bf16 sums are converted to f32, reduced and
// rounded once, matching the in-process backend.
//
// MPI cannot tell a rank that its peers called a different collective; a mismatch is
// undefined behaviour there. With verification on (constructor flag, or the environment
// variable CTXPAR_MPI_VERIFY=1) every collective first all-gathers the ranks' signatures
// and throws the same Error on every rank when they differ, at the cost of one extra small
// MPI_Allgather per call.
#pragma once

#include <mpi.h>

#include "ctxpar/comm/communicator.h"

namespace ctxpar {

struct CollectiveSignature;

class MpiCommunicator final : public Communicator {
 public:
  // A communicator over all processes (a duplicate of MPI_COMM_WORLD, so our traffic never
  // matches someone else's). MPI must be initialized (see MpiSession).
  static std::unique_ptr<MpiCommunicator> world();

  // Takes ownership of comm (freed on destruction unless MPI is already finalized).
  // Verification starts as CTXPAR_MPI_VERIFY says (off when unset).
  explicit MpiCommunicator(MPI_Comm comm);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend_name() const override { return "mpi"; }

  void all_gather(const Tensor& input, Tensor& output, int dim) override;
  void all_to_all(const Tensor& input, Tensor& output, int dim) override;
  void reduce_scatter(const Tensor& input, Tensor& output, int dim) override;
  void all_reduce(Tensor& tensor) override;
  void broadcast(Tensor& tensor, int root) override;
  void broadcast_bytes(std::vector<uint8_t>& bytes, int root) override;
  void barrier() override;
  // color must be >= 0; the new communicator inherits this one's verification setting.
  std::unique_ptr<Communicator> split(int color, int key) override;

  using Communicator::all_gather;
  using Communicator::all_to_all;
  using Communicator::reduce_scatter;

  MPI_Comm handle() const { return comm_; }
  bool verify_collectives() const { return verify_; }
  void set_verify_collectives(bool verify) { verify_ = verify; }

 private:
  // Throws on every rank when the ranks' signatures differ; no-op unless verify_.
  void verify(const CollectiveSignature& signature);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  bool verify_ = false;
  uint64_t seq_ = 0;
};

}  // namespace ctxpar
