// Shared by the comm benchmarks: the collectives under test, their message sizes, and the
// memcpy ceiling each result is reported against.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ctxpar/comm/communicator.h"

namespace ctxpar::bench {

enum class Op { kAllGather, kAllToAll, kReduceScatter };

inline const char* op_name(Op op) {
  switch (op) {
    case Op::kAllGather:
      return "all_gather";
    case Op::kAllToAll:
      return "all_to_all";
    case Op::kReduceScatter:
      return "reduce_scatter";
  }
  return "?";
}

inline const std::vector<int64_t>& message_bytes() {
  static const std::vector<int64_t> sizes = {4 << 10, 64 << 10, 1 << 20, 16 << 20};
  return sizes;
}

// The tensors one rank passes. `bytes` is what each rank's collective touches: all_gather's
// output, all_to_all's input (= output), reduce_scatter's input (it reads that many bytes
// from the group and writes bytes / ranks). f32 elements.
struct OpBuffers {
  Tensor input, output;
  OpBuffers(Op op, int ranks, int64_t bytes) {
    const int64_t elems = bytes / 4 / ranks * ranks;  // divisible by the group size
    switch (op) {
      case Op::kAllGather:
        input = Tensor::empty({elems / ranks}, DType::kF32);
        output = Tensor::empty({elems}, DType::kF32);
        break;
      case Op::kAllToAll:
        input = Tensor::empty({elems}, DType::kF32);
        output = Tensor::empty({elems}, DType::kF32);
        break;
      case Op::kReduceScatter:
        input = Tensor::empty({elems}, DType::kF32);
        output = Tensor::empty({elems / ranks}, DType::kF32);
        break;
    }
    input.fill(1.0);
    output.fill(0.0);
  }
  void run(Op op, Communicator& comm) {
    switch (op) {
      case Op::kAllGather:
        comm.all_gather(input, output, 0);
        break;
      case Op::kAllToAll:
        comm.all_to_all(input, output, 0);
        break;
      case Op::kReduceScatter:
        comm.reduce_scatter(input, output, 0);
        break;
    }
  }
};

// Seconds for one memcpy of `bytes` between two warm buffers on this thread: the ceiling a
// collective that moves the same bytes is compared with.
inline double memcpy_seconds(int64_t bytes) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  std::memcpy(dst.data(), src.data(), bytes);  // warm both buffers
  int64_t reps = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < 0.02 || reps < 10) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
    ++reps;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return elapsed / static_cast<double>(reps);
}

}  // namespace ctxpar::bench
