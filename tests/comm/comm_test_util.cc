#include "comm_test_util.h"

#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>

#include "ctxpar/core/error.h"

namespace ctxpar::testing {

uint64_t mix_seed(uint64_t seed, uint64_t stream) {
  // splitmix64 of the pair: nearby streams give unrelated generators.
  uint64_t z = seed + 0x9e3779b97f4a7c15ull * (stream + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

Tensor random_tensor(const Shape& shape, DType dtype, uint64_t seed, uint64_t stream,
                     Values values) {
  std::mt19937_64 rng(mix_seed(seed, stream));
  Tensor t = Tensor::empty(shape, dtype);
  const int64_t n = t.numel();
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> sixteenths(-256, 256);
  auto next_float = [&] {
    return values == Values::kExact ? static_cast<float>(sixteenths(rng)) / 16.0f : normal(rng);
  };
  switch (dtype) {
    case DType::kF32:
      for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = next_float();
      break;
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) t.data<bf16>()[i] = bf16(next_float());
      break;
    case DType::kI32: {
      // The full range, so sums wrap around and the wrap is checked.
      std::uniform_int_distribution<int32_t> d(INT32_MIN, INT32_MAX);
      for (int64_t i = 0; i < n; ++i) t.data<int32_t>()[i] = d(rng);
      break;
    }
    case DType::kI64: {
      std::uniform_int_distribution<int64_t> d(-(int64_t{1} << 40), int64_t{1} << 40);
      for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[i] = d(rng);
      break;
    }
    case DType::kU8: {
      std::uniform_int_distribution<int> d(0, 255);
      for (int64_t i = 0; i < n; ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(d(rng));
      break;
    }
    default:
      CTXPAR_FAIL("random_tensor: unsupported dtype {}", dtype_name(dtype));
  }
  return t;
}

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::kContiguous:
      return "contiguous";
    case Layout::kPadded:
      return "padded";
    case Layout::kInterleaved:
      return "interleaved";
  }
  return "?";
}

Buffer make_buffer(const Shape& shape, DType dtype, Layout layout, uint8_t poison) {
  Buffer b;
  b.poison = poison;
  if (layout == Layout::kContiguous || shape.empty()) {
    b.host = Tensor::empty(shape, dtype);
    b.host.fill_bytes(poison);
    b.view = b.host;
    return b;
  }
  // Host: one extra element before and two after the view in the first and last dims; for
  // kInterleaved the last dim also holds a gap after every element.
  const int last = static_cast<int>(shape.size()) - 1;
  Shape host_shape = shape;
  const int64_t step = layout == Layout::kInterleaved ? 2 : 1;
  host_shape[last] = shape[last] * step + 3;
  if (last > 0) host_shape[0] += 3;
  b.host = Tensor::empty(host_shape, dtype);
  b.host.fill_bytes(poison);
  std::vector<int64_t> strides = b.host.strides();
  strides[last] *= step;
  int64_t offset = strides[last] / step;  // one element into the last dim
  if (last > 0) offset += b.host.strides()[0];
  auto* base =
      static_cast<char*>(b.host.raw()) + offset * static_cast<int64_t>(b.host.element_size());
  b.view = Tensor::wrap(base, shape, dtype, strides);
  return b;
}

int64_t count_padding_writes(const Buffer& buffer) {
  const auto* base = static_cast<const uint8_t*>(buffer.host.raw());
  const auto* view = static_cast<const uint8_t*>(buffer.view.raw());
  const int64_t esize = static_cast<int64_t>(buffer.host.element_size());
  // Mark the view's bytes, then every unmarked host byte must still be poison.
  std::vector<bool> in_view(buffer.host.nbytes(), false);
  const auto& strides = buffer.view.strides();
  for_each_index(buffer.view.shape(), [&](const std::vector<int64_t>& idx) {
    int64_t off = view - base;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * strides[d] * esize;
    for (int64_t k = 0; k < esize; ++k) in_view[off + k] = true;
  });
  int64_t writes = 0;
  for (size_t i = 0; i < in_view.size(); ++i) {
    if (!in_view[i] && base[i] != buffer.poison) ++writes;
  }
  return writes;
}

void for_each_index(const Shape& shape,
                    const std::function<void(const std::vector<int64_t>&)>& fn) {
  if (shape_numel(shape) == 0) return;
  std::vector<int64_t> idx(shape.size(), 0);
  while (true) {
    fn(idx);
    int d = static_cast<int>(shape.size()) - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

std::string index_str(const std::vector<int64_t>& index) {
  return shape_str(index);
}

uint64_t shared_seed(Communicator& comm) {
  Tensor seed = Tensor::empty({1}, DType::kI64);
  if (comm.rank() == 0) {
    std::random_device rd;
    seed.data<int64_t>()[0] = static_cast<int64_t>((uint64_t{rd()} << 32) | rd());
  }
  comm.broadcast(seed, 0);
  return static_cast<uint64_t>(seed.data<int64_t>()[0]);
}

void run_with_deadline(double seconds, const std::string& what, const std::function<void()>& fn) {
  std::packaged_task<void()> task(fn);
  auto done = task.get_future();
  std::thread runner(std::move(task));
  if (done.wait_for(std::chrono::duration<double>(seconds)) != std::future_status::ready) {
    std::fprintf(stderr, "FAILED: %s did not finish within %.0f s (hang)\n", what.c_str(), seconds);
    std::fflush(stderr);
    std::_Exit(3);  // the hung thread cannot be joined; end the process as a failure
  }
  runner.join();
  done.get();  // rethrows what fn threw
}

}  // namespace ctxpar::testing
