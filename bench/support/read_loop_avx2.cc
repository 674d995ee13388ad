// AVX2 read loop (compiled with -mavx2): per stream two 32-byte loads per step into two
// accumulators of its own, so no add chain limits the loads.
#include <immintrin.h>

#include "read_loop.h"

namespace ctxpar::bench::detail {
namespace {

template <int S>
__m256i read_streams(const char* p, int64_t part, int64_t prefetch_bytes) {
  __m256i a[S][2];
  for (int s = 0; s < S; ++s) a[s][0] = a[s][1] = _mm256_setzero_si256();
  for (int64_t i = 0; i < part; i += 64) {
    for (int s = 0; s < S; ++s) {
      const char* q = p + s * part + i;
      // The step is one line: one request; past the buffer does not fault.
      if (prefetch_bytes > 0) _mm_prefetch(q + prefetch_bytes, _MM_HINT_T0);
      a[s][0] = _mm256_add_epi64(a[s][0], _mm256_load_si256(reinterpret_cast<const __m256i*>(q)));
      a[s][1] =
          _mm256_add_epi64(a[s][1], _mm256_load_si256(reinterpret_cast<const __m256i*>(q + 32)));
    }
  }
  __m256i sum = _mm256_setzero_si256();
  for (int s = 0; s < S; ++s) sum = _mm256_add_epi64(sum, _mm256_add_epi64(a[s][0], a[s][1]));
  return sum;
}

}  // namespace

uint64_t read_sum_avx2(const char* p, int64_t bytes, int streams, int64_t prefetch_bytes) {
  const int64_t part = stream_part_bytes(bytes, streams);
  __m256i s = read_streams<1>(p + streams * part, bytes - streams * part, 0);
  // One instantiation per stream count, so each keeps its accumulators in registers.
  constexpr __m256i (*kLoops[kMaxReadStreams])(const char*, int64_t, int64_t) = {
      read_streams<1>, read_streams<2>, read_streams<3>,
      read_streams<4>, read_streams<5>, read_streams<6>};
  s = _mm256_add_epi64(s, kLoops[streams - 1](p, part, prefetch_bytes));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

}  // namespace ctxpar::bench::detail
