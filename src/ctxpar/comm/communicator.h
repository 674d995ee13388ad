// Communicator: the collectives every layer above uses to talk between ranks. Two backends
// implement it: in-process (ranks are threads of one process; inprocess_communicator.h) and
// MPI (ranks are processes started by mpirun; mpi_communicator.h).
//
// All collectives are blocking and must be called by every rank of the group in the same
// order with matching shapes and dtypes. Inputs and outputs are caller-owned tensors of dtype
// f32, bf16, i32, i64 or u8 (u8 is raw bytes); they may be strided views. Reductions sum;
// bf16 sums accumulate in f32 and round once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ctxpar/core/tensor.h"

namespace ctxpar {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "inprocess" or "mpi"; for messages and benchmarks.
  virtual std::string backend_name() const = 0;

  // output = concatenation of every rank's input along dim, in rank order.
  // output.shape == input.shape with shape[dim] * size().
  virtual void all_gather(const Tensor& input, Tensor& output, int dim) = 0;

  // input is split along dim into size() equal chunks; chunk j goes to rank j. output has
  // input's shape; its chunk i is what rank i sent to this rank.
  virtual void all_to_all(const Tensor& input, Tensor& output, int dim) = 0;

  // Sums input over ranks and leaves chunk rank() (along dim) of the sum in output.
  // input.shape[dim] == size() * output.shape[dim].
  virtual void reduce_scatter(const Tensor& input, Tensor& output, int dim) = 0;

  // In-place sum over ranks.
  virtual void all_reduce(Tensor& tensor) = 0;

  // tensor on every rank becomes root's tensor (same shape and dtype everywhere).
  virtual void broadcast(Tensor& tensor, int root) = 0;

  // Variable-length byte broadcast: non-root ranks' bytes are replaced by root's.
  virtual void broadcast_bytes(std::vector<uint8_t>& bytes, int root) = 0;

  virtual void barrier() = 0;

  // Collective over this group. Ranks passing the same color form a new group, ordered by
  // (key, rank in this group). The returned communicator is owned by the caller.
  virtual std::unique_ptr<Communicator> split(int color, int key) = 0;

  // Allocating conveniences built on the primitives above.
  Tensor all_gather(const Tensor& input, int dim);
  Tensor all_to_all(const Tensor& input, int dim);
  Tensor reduce_scatter(const Tensor& input, int dim);
};

}  // namespace ctxpar
