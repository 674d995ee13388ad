// The read-bandwidth ceiling every benchmark that reports "fraction of bandwidth" divides by
// (DESIGN.md §7: ratios to a ceiling measured in the same run).
//
// What it measures: a plain vectorized read loop (AVX-512 or AVX2 where the CPU has it, two
// independent accumulators per stream so the loop is never latency-bound) over a buffer much
// larger than the last-level cache (at least 1 GiB and 4× the LLC), `threads` threads each
// pinned to its own CPU and each reading the part of the buffer it first touched itself, as
// 1, 2, 3, 4 and 6 sequential streams in turn, and as 1, 2 and 4 streams that also prefetch
// 512 bytes ahead. The buffer asks for transparent huge pages (MADV_HUGEPAGE), like the
// tensors the kernels read (core/tensor.h). The result is the best pass of the best loop.
//
// Why each of those matters (each was seen to lower the figure on the 2-core VMs, most by half):
// - a scalar or SSE2 loop with one accumulator is bound by the add chain, not by DRAM;
// - with THP in "madvise" mode a plain std::vector gets 4 KiB pages: ~15% less on 1 thread,
//   and the figure then depends on how fragmented memory is at the time;
// - two unpinned threads are sometimes put on one core by the scheduler while the machine is
//   shared, which reads as half the 2-thread bandwidth;
// - one or three passes taken while another process runs give whatever that process left;
// - one stream per thread: an AMD EPYC VM (AVX2) read 20 GB/s with 1 thread through one
//   stream and 25 through three (2 threads: 31 and 33), as the GEMV reads 4 weight rows at once;
// - no software prefetch: on an Intel Xeon VM (AVX-512, AMX) two streams read 15.5-18.2 GB/s
//   with 1 thread and 17.7-21.1 when each prefetches 512 bytes ahead (2 threads: 27.6 and
//   30.6), as the decode GEMV and attention kernels prefetch; against the plain loops alone
//   those kernels read "more than the ceiling" (1T decode at 0.99 of its roofline).
#pragma once

#include <cstdint>
#include <string>

namespace ctxpar::bench {

struct ReadCeiling {
  double gb_per_s = 0;             // best pass, 1e9 bytes per second over all threads
  double worst_gb_per_s = 0;       // slowest pass of that loop: how much the machine moved
  double one_stream_gb_per_s = 0;  // best pass with one stream per thread
  int streams = 0;                 // streams per thread of the best pass
  int64_t prefetch_bytes = 0;      // how far ahead those streams prefetched (0: not at all)
  int threads = 0;
  int passes = 0;
  int64_t buffer_bytes = 0;
  bool pinned = false;   // every thread on its own CPU
  std::string loop_isa;  // "avx512", "avx2" or "scalar"
};

// Bytes a benchmark must read per pass to read from DRAM, not the last-level cache: at least
// 1 GiB and 4× the LLC (the ceiling's own buffer size).
int64_t beyond_llc_bytes();

// Copies of a `bytes` working set (a layer's KV cache) that add up to beyond_llc_bytes().
int64_t copies_beyond_llc(int64_t bytes);

// Measures the ceiling now (about 8 × passes × buffer / bandwidth seconds, plus first touch).
// Each pass reads the buffer once per loop shape.
ReadCeiling measure_read_ceiling(int threads, int passes = 4);

// Measured once per thread count per process, then reused: what a benchmark compares with.
const ReadCeiling& read_ceiling(int threads);

// "read 32.9 GB/s (2 threads pinned, avx2, 3 streams per thread, best of 4 passes over
// 1.0 GiB; worst 32.0; 1 stream 31.1)"; a prefetching loop adds "prefetching 512 B ahead"
// after the stream count.
std::string describe(const ReadCeiling& c);

}  // namespace ctxpar::bench
