// Internal to read_bandwidth.cc: the read loops per ISA. Each sums `bytes` bytes from p (64-byte
// aligned, bytes a multiple of 256) as 64-bit integers and returns the sum, so the compiler
// cannot drop the loads.
#pragma once

#include <cstdint>

namespace ctxpar::bench::detail {

uint64_t read_sum_avx512(const char* p, int64_t bytes);  // read_loop_avx512.cc
uint64_t read_sum_avx2(const char* p, int64_t bytes);    // read_loop_avx2.cc
uint64_t read_sum_scalar(const char* p, int64_t bytes);  // read_bandwidth.cc

}  // namespace ctxpar::bench::detail
