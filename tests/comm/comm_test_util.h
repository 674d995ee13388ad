// Helpers for comm tests: reproducible random tensors (any rank can regenerate any other
// rank's input from the shared seed), strided buffers with poisoned padding, and a
// deadline that turns a hang into a failure.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ctxpar/comm/communicator.h"
#include "ctxpar/core/tensor.h"

namespace ctxpar::testing {

// Values a random tensor holds. kExact floats are multiples of 1/16 in [-16, 16]: sums of a
// few of them are exact in f32 and representable before the final bf16 rounding, so a sum
// that rounds more than once shows up as a wrong value.
enum class Values { kNormal, kExact };

// Deterministic per (seed, stream): every rank gets the same value for the same arguments.
uint64_t mix_seed(uint64_t seed, uint64_t stream);

// A contiguous tensor of fresh random values drawn from mix_seed(seed, stream).
Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed, uint64_t stream,
                     Values values = Values::kNormal);

// How a test tensor sits in its host buffer: contiguous, with padding around the first
// and last dims (rows are contiguous runs, the view is not), or every other element of the
// last dim (no two elements adjacent).
enum class Layout { kContiguous, kPadded, kInterleaved };
const char* layout_name(Layout layout);

// A view of `shape` inside a host buffer laid out as `layout`. The host is filled with
// `poison` bytes.
struct Buffer {
  Tensor host;
  Tensor view;
  uint8_t poison = 0;
};
Buffer make_buffer(const Shape& shape, DType dtype, Layout layout, uint8_t poison);
// Number of host bytes outside the view that no longer hold the poison byte.
int64_t count_padding_writes(const Buffer& buffer);

// Calls fn(index) for every index of shape in row-major order.
void for_each_index(const Shape& shape, const std::function<void(const std::vector<int64_t>&)>& fn);

std::string index_str(const std::vector<int64_t>& index);

// Rank 0 draws a seed from std::random_device and broadcasts it.
uint64_t shared_seed(Communicator& comm);

// Runs fn on a separate thread. If it has not finished after `seconds`, prints `what` and
// ends the process with a failure, so a hang in the code under test fails the test.
void run_with_deadline(double seconds, const std::string& what, const std::function<void()>& fn);

}  // namespace ctxpar::testing
