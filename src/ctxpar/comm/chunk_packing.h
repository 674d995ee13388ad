// Rank-major packing for backends whose collectives move contiguous per-rank blocks (MPI):
// chunk i of a tensor along dim is copied to or from row i of a contiguous [n, ...] buffer.
#pragma once

#include "ctxpar/core/tensor.h"

namespace ctxpar {

// True when tensor is contiguous and every dim before `dim` has size 1, so its chunks along
// dim already are consecutive blocks in chunk order and need no packing.
bool chunks_are_rank_major(const Tensor& tensor, int dim);

// packed: contiguous [num_chunks, chunk shape], where chunk shape is tensor's shape with dim
// divided by num_chunks. Row i of packed = chunk i of tensor. Dtypes may differ between the
// two when both are float kinds (converted elementwise, e.g. bf16 -> f32 for a sum).
void pack_chunks(const Tensor& tensor, int dim, int num_chunks, const Tensor& packed);
// The inverse: chunk i of tensor = row i of packed. Writes through tensor's data pointer.
void unpack_chunks(const Tensor& packed, int dim, int num_chunks, const Tensor& tensor);

// Shape of packed for a tensor split into num_chunks along dim.
Shape packed_shape(const Tensor& tensor, int dim, int num_chunks);

}  // namespace ctxpar
