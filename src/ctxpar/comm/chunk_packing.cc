#include "ctxpar/comm/chunk_packing.h"

#include "ctxpar/comm/collective_check.h"
#include "ctxpar/comm/strided_walk.h"
#include "ctxpar/core/error.h"

namespace ctxpar {
namespace {

// Copies src into dst: a plain strided copy for one dtype, Tensor::copy_from to convert.
void copy_chunk(const Tensor& src, const Tensor& dst) {
  if (src.dtype() == dst.dtype()) {
    strided_copy(src, dst);
  } else {
    Tensor target = dst;
    target.copy_from(src);
  }
}

void check_packed(const Tensor& tensor, int dim, int num_chunks, const Tensor& packed) {
  CTXPAR_CHECK(packed.is_contiguous() && packed.shape() == packed_shape(tensor, dim, num_chunks),
               "chunk packing: packed buffer {} must be contiguous with shape {}",
               packed.describe(), shape_str(packed_shape(tensor, dim, num_chunks)));
}

}  // namespace

bool chunks_are_rank_major(const Tensor& tensor, int dim) {
  if (!tensor.is_contiguous()) return false;
  for (int d = 0; d < dim; ++d) {
    if (tensor.size(d) != 1) return false;
  }
  return true;
}

Shape packed_shape(const Tensor& tensor, int dim, int num_chunks) {
  CTXPAR_CHECK(num_chunks > 0 && tensor.size(dim) % num_chunks == 0,
               "chunk packing: dim {} of {} cannot be split into {} equal chunks", dim,
               tensor.describe(), num_chunks);
  Shape shape = tensor.shape();
  shape[dim] /= num_chunks;
  shape.insert(shape.begin(), num_chunks);
  return shape;
}

void pack_chunks(const Tensor& tensor, int dim, int num_chunks, const Tensor& packed) {
  check_packed(tensor, dim, num_chunks, packed);
  const int64_t chunk = tensor.size(dim) / num_chunks;
  for (int i = 0; i < num_chunks; ++i) {
    copy_chunk(slice_view(tensor, dim, i * chunk, (i + 1) * chunk), packed.select(0, i));
  }
}

void unpack_chunks(const Tensor& packed, int dim, int num_chunks, const Tensor& tensor) {
  check_packed(tensor, dim, num_chunks, packed);
  const int64_t chunk = tensor.size(dim) / num_chunks;
  for (int i = 0; i < num_chunks; ++i) {
    copy_chunk(packed.select(0, i), slice_view(tensor, dim, i * chunk, (i + 1) * chunk));
  }
}

}  // namespace ctxpar
