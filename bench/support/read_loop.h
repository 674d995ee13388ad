// Internal to read_bandwidth.cc: the read loops per ISA. Each sums `bytes` bytes from p
// (64-byte aligned, bytes a multiple of 256) as 64-bit integers and returns the sum, so the
// compiler cannot drop the loads. The bytes are read as `streams` (1..kMaxReadStreams)
// sequential streams advancing together, each over its own contiguous part: on some CPUs one
// core reads DRAM faster through several streams than through one (an AMD EPYC VM: 1 stream
// 20 GB/s, 3 streams 25), the way a GEMV reads several weight rows or attention reads K and V.
// With prefetch_bytes > 0 each stream also prefetches (into L1) that many bytes ahead of its
// loads, the way the decode GEMV and attention kernels read; 0 leaves it to the hardware.
#pragma once

#include <cstdint>

#include "ctxpar/core/error.h"

namespace ctxpar::bench::detail {

inline constexpr int kMaxReadStreams = 6;

uint64_t read_sum_avx512(const char* p, int64_t bytes, int streams,
                         int64_t prefetch_bytes);  // read_loop_avx512.cc
uint64_t read_sum_avx2(const char* p, int64_t bytes, int streams,
                       int64_t prefetch_bytes);  // read_loop_avx2.cc
uint64_t read_sum_scalar(const char* p, int64_t bytes, int streams,
                         int64_t prefetch_bytes);  // read_bandwidth.cc

// The part each of `streams` streams reads: a multiple of 256 bytes; the first stream also
// reads what is left past streams × part.
inline int64_t stream_part_bytes(int64_t bytes, int streams) {
  CTXPAR_CHECK(streams >= 1 && streams <= kMaxReadStreams, "read loop: {} streams (valid 1..{})",
               streams, kMaxReadStreams);
  return bytes / streams / 256 * 256;
}

}  // namespace ctxpar::bench::detail
