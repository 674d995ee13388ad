#include "ctxpar/comm/communicator.h"

#include "ctxpar/core/error.h"

namespace ctxpar {

Tensor Communicator::all_gather(const Tensor& input, int dim) {
  Shape shape = input.shape();
  const int d = dim < 0 ? dim + input.ndim() : dim;
  CTXPAR_CHECK(d >= 0 && d < input.ndim(), "all_gather: dim {} out of range for {}", dim,
               input.describe());
  shape[d] *= size();
  Tensor out = Tensor::empty(shape, input.dtype());
  all_gather(input, out, d);
  return out;
}

Tensor Communicator::all_to_all(const Tensor& input, int dim) {
  Tensor out = Tensor::empty(input.shape(), input.dtype());
  all_to_all(input, out, dim);
  return out;
}

Tensor Communicator::reduce_scatter(const Tensor& input, int dim) {
  Shape shape = input.shape();
  const int d = dim < 0 ? dim + input.ndim() : dim;
  CTXPAR_CHECK(d >= 0 && d < input.ndim(), "reduce_scatter: dim {} out of range for {}", dim,
               input.describe());
  CTXPAR_CHECK(shape[d] % size() == 0,
               "reduce_scatter: dimension {} of {} ({}) is not divisible by the group size {}", d,
               input.describe(), shape[d], size());
  shape[d] /= size();
  Tensor out = Tensor::empty(shape, input.dtype());
  reduce_scatter(input, out, d);
  return out;
}

}  // namespace ctxpar
