// Argument checks shared by every Communicator backend: the rank-local ones (output shapes,
// dims, dtypes a sum supports) and the cross-rank one (did every rank of the group call the
// same collective with the same dtype, shape, dim and root?).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ctxpar/core/tensor.h"

namespace ctxpar {

enum class CollectiveKind : uint8_t {
  kAllGather,
  kAllToAll,
  kReduceScatter,
  kAllReduce,
  kBroadcast,
  kBroadcastBytes,
  kBarrier,
  kSplit,
};

// "all_gather", "barrier", ...
std::string_view collective_name(CollectiveKind kind);

// What one rank passed to a collective, as far as the other ranks must agree with it.
// shape points into memory the caller keeps alive while the signature is compared.
struct CollectiveSignature {
  CollectiveKind kind = CollectiveKind::kBarrier;
  int dim = 0;   // normalized; all_gather, all_to_all, reduce_scatter
  int root = 0;  // broadcast, broadcast_bytes
  bool has_tensor = false;
  DType dtype = DType::kF32;
  const int64_t* shape = nullptr;
  int ndim = 0;
};

// Signature of a tensor collective (the tensor every rank must agree on: the input, or the
// in-place tensor of all_reduce and broadcast).
CollectiveSignature tensor_signature(CollectiveKind kind, const Tensor& tensor, int dim = 0,
                                     int root = 0);

// Returns "" when every rank's signature agrees with rank 0's. Otherwise a message naming
// the first rank that differs and what it and rank 0 passed, e.g.
// "all_gather: rank 2 sent bfloat16[4, 8], rank 0 sent float32[4, 8]". Every rank that
// compares the same signatures gets the same message. signatures[i] is group rank i's.
std::string find_signature_mismatch(std::span<const CollectiveSignature> signatures);

// Rank-local checks. Each throws an Error naming the bad value and the valid range, and
// returns the dim normalized to [0, ndim).
int check_all_gather_args(const Tensor& input, const Tensor& output, int dim, int group_size);
int check_all_to_all_args(const Tensor& input, const Tensor& output, int dim, int group_size);
int check_reduce_scatter_args(const Tensor& input, const Tensor& output, int dim, int group_size);
// Sums support float32, bfloat16, int32, int64 and uint8 (integers wrap around).
void check_summable(std::string_view op, DType dtype);
void check_root(std::string_view op, int root, int group_size);

// Non-owning view of elements [begin, end) of dim; no storage reference is taken, so the
// caller keeps the tensor's memory alive while the view is used.
Tensor slice_view(const Tensor& tensor, int dim, int64_t begin, int64_t end);

}  // namespace ctxpar
