// AVX-512 read loop (compiled with -mavx512f): four 64-byte loads per iteration into four
// accumulators, 256 bytes per iteration.
#include <immintrin.h>

#include "read_loop.h"

namespace ctxpar::bench::detail {

uint64_t read_sum_avx512(const char* p, int64_t bytes) {
  __m512i a0 = _mm512_setzero_si512(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = 0; i < bytes; i += 256) {
    a0 = _mm512_add_epi64(a0, _mm512_load_si512(p + i));
    a1 = _mm512_add_epi64(a1, _mm512_load_si512(p + i + 64));
    a2 = _mm512_add_epi64(a2, _mm512_load_si512(p + i + 128));
    a3 = _mm512_add_epi64(a3, _mm512_load_si512(p + i + 192));
  }
  // Lanes summed through memory: GCC 12's _mm512_reduce_add_epi64 trips -Wuninitialized.
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a0, a1), _mm512_add_epi64(a2, a3)));
  uint64_t s = 0;
  for (uint64_t x : lanes) s += x;
  return s;
}

}  // namespace ctxpar::bench::detail
