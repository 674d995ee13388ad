// The read loops the ceiling times must read every byte once whatever the stream count: each
// loop's sum over a random buffer equals a plain sum, for 1..kMaxReadStreams streams, with and
// without software prefetch, and sizes whose parts do not divide evenly.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/error.h"
#include "read_loop.h"

namespace ctxpar::bench::detail {
namespace {

struct AlignedBuffer {
  explicit AlignedBuffer(int64_t bytes)
      : data(static_cast<uint64_t*>(std::aligned_alloc(64, static_cast<size_t>(bytes)))) {}
  ~AlignedBuffer() { std::free(data); }
  uint64_t* data;
};

TEST(ReadLoop, EveryLoopSumsEveryByteForEveryStreamCount) {
  using Loop = uint64_t (*)(const char*, int64_t, int, int64_t);
  std::vector<Loop> loops = {read_sum_scalar};
  if (cpu_features().avx2_fma) loops.push_back(read_sum_avx2);
  if (cpu_features().avx512) loops.push_back(read_sum_avx512);
  std::mt19937_64 rng(std::random_device{}());
  for (const int64_t bytes :
       {int64_t{256}, int64_t{256} * 7, int64_t{256} * 1031, int64_t{1} << 20}) {
    AlignedBuffer buf(bytes);
    uint64_t want = 0;
    for (int64_t i = 0; i < bytes / 8; ++i) want += buf.data[i] = rng();
    const auto* p = reinterpret_cast<const char*>(buf.data);
    for (size_t l = 0; l < loops.size(); ++l) {
      for (int streams = 1; streams <= kMaxReadStreams; ++streams) {
        for (const int64_t prefetch : {int64_t{0}, int64_t{512}}) {
          EXPECT_EQ(loops[l](p, bytes, streams, prefetch), want)
              << "loop " << l << ", " << bytes << " bytes, " << streams << " streams, prefetch "
              << prefetch;
        }
      }
    }
  }
}

TEST(ReadLoop, AStreamCountOutOfRangeIsAnError) {
  AlignedBuffer buf(4096);
  std::memset(buf.data, 0, 4096);
  const auto* p = reinterpret_cast<const char*>(buf.data);
  for (const int streams : {0, -1, kMaxReadStreams + 1}) {
    EXPECT_THROW(read_sum_scalar(p, 4096, streams, 0), Error) << streams;
    if (cpu_features().avx2_fma) {
      EXPECT_THROW(read_sum_avx2(p, 4096, streams, 0), Error) << streams;
    }
  }
}

}  // namespace
}  // namespace ctxpar::bench::detail
