// AVX-512 read loop (compiled with -mavx512f): per stream two 64-byte loads per step into two
// accumulators of its own, so no add chain limits the loads.
#include <immintrin.h>

#include "read_loop.h"

namespace ctxpar::bench::detail {
namespace {

template <int S>
__m512i read_streams(const char* p, int64_t part, int64_t prefetch_bytes) {
  __m512i a[S][2];
  for (int s = 0; s < S; ++s) a[s][0] = a[s][1] = _mm512_setzero_si512();
  for (int64_t i = 0; i < part; i += 128) {
    for (int s = 0; s < S; ++s) {
      const char* q = p + s * part + i;
      if (prefetch_bytes > 0) {  // one line per 64 bytes read; past the buffer does not fault
        for (int64_t l = 0; l < 128; l += 64) _mm_prefetch(q + prefetch_bytes + l, _MM_HINT_T0);
      }
      a[s][0] = _mm512_add_epi64(a[s][0], _mm512_load_si512(q));
      a[s][1] = _mm512_add_epi64(a[s][1], _mm512_load_si512(q + 64));
    }
  }
  __m512i sum = _mm512_setzero_si512();
  for (int s = 0; s < S; ++s) sum = _mm512_add_epi64(sum, _mm512_add_epi64(a[s][0], a[s][1]));
  return sum;
}

}  // namespace

uint64_t read_sum_avx512(const char* p, int64_t bytes, int streams, int64_t prefetch_bytes) {
  const int64_t part = stream_part_bytes(bytes, streams);
  __m512i s = read_streams<1>(p + streams * part, bytes - streams * part, 0);
  // One instantiation per stream count, so each keeps its accumulators in registers.
  constexpr __m512i (*kLoops[kMaxReadStreams])(const char*, int64_t, int64_t) = {
      read_streams<1>, read_streams<2>, read_streams<3>,
      read_streams<4>, read_streams<5>, read_streams<6>};
  s = _mm512_add_epi64(s, kLoops[streams - 1](p, part, prefetch_bytes));
  // Lanes summed through memory: GCC 12's _mm512_reduce_add_epi64 trips -Wuninitialized.
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, s);
  uint64_t sum = 0;
  for (uint64_t x : lanes) sum += x;
  return sum;
}

}  // namespace ctxpar::bench::detail
