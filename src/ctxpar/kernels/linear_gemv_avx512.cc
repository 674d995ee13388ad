// AVX-512 variant of the decode GEMV: the shared template over simd::Vec16, and for one token
// over bf16 weights (batch-1 decode, the case that reads every weight per token) a kernel of
// its own, tuned as a read loop.
#include "ctxpar/kernels/linear_gemv_impl.h"
#include "ctxpar/kernels/simd_avx512.h"

#include <bit>

namespace ctxpar::kernels::detail {
namespace {

using simd::Vec16;

// One token, bf16 weights: the rows are read as two streams (each a contiguous run of half the
// rows), four 64-byte lines per stream per step into 8 accumulators, each line prefetched into
// L1 512 bytes ahead, and each row's sum stored past the caches (movnti). On an Intel Xeon VM
// (AVX-512, AMX), every linear of the bench/compare model in turn, against a 2-stream
// prefetching read loop in the same process (a throwaway driver, best of 5 passes): this kernel
// 0.97-0.99 with 1 and 2 threads; the template's 8 streams of one line, prefetching into L2,
// 0.83-0.89; two streams of one line 0.87-0.91, four or more streams into L1 0.67-0.75 (more
// lines ahead than the L1 has miss buffers). Plain stores of the sums cost 5-7%, once per output
// line (storing into a line that stays in L1 costs nothing; neither prefetchw nor prefetcht0 of
// the next output line helped), so the sums bypass the caches.
constexpr int kOneTokenStreams = 2;
constexpr int64_t kLineValues = 32;                // bf16 values per 64-byte line (a pair step)
constexpr int64_t kStepValues = 4 * kLineValues;   // per stream per step
constexpr int64_t kOneTokenAheadValues = 512 / 2;  // 512 bytes

// sums[s] = Σ_i x[i]·w[s·stride·ldw + i] for S rows spaced `stride` rows apart; x in pair lane
// order over full 32-value steps, natural order after (gemv_prepare_x).
template <int S>
inline void one_token_rows(const float* x, int64_t k, const uint16_t* w, int64_t ldw,
                           int64_t stride, float* sums) {
  constexpr int kLines = kStepValues / kLineValues;
  Vec16 acc[S][2 * kLines];  // an even and an odd sum per line
  for (int s = 0; s < S; ++s) {
    for (int u = 0; u < 2 * kLines; ++u) acc[s][u] = Vec16::zero();
  }
  int64_t i = 0;
  for (; i + kStepValues <= k; i += kStepValues) {
    // In a row's last 512 bytes, the head of the next row, which this stream reads next (x86
    // prefetches past the weight do not fault).
    const int64_t ahead =
        i + kOneTokenAheadValues < k ? kOneTokenAheadValues : ldw - k + kOneTokenAheadValues;
    for (int s = 0; s < S; ++s) {
      const uint16_t* row = w + s * stride * ldw + i;
      for (int u = 0; u < kLines; ++u) {
        const uint16_t* p = row + u * kLineValues;
        __builtin_prefetch(p + ahead, 0, 3);
        Vec16 even, odd;
        Vec16::load_bf16_pair(p, even, odd);
        acc[s][2 * u] = mul_add(even, Vec16::load(x + i + u * kLineValues), acc[s][2 * u]);
        acc[s][2 * u + 1] =
            mul_add(odd, Vec16::load(x + i + u * kLineValues + 16), acc[s][2 * u + 1]);
      }
    }
  }
  for (; i + kLineValues <= k; i += kLineValues) {
    for (int s = 0; s < S; ++s) {
      Vec16 even, odd;
      Vec16::load_bf16_pair(w + s * stride * ldw + i, even, odd);
      acc[s][0] = mul_add(even, Vec16::load(x + i), acc[s][0]);
      acc[s][1] = mul_add(odd, Vec16::load(x + i + 16), acc[s][1]);
    }
  }
  for (int s = 0; s < S; ++s) {
    for (int h = kLines; h >= 1; h /= 2) {
      for (int u = 0; u < h; ++u) acc[s][u] = acc[s][u] + acc[s][u + h];
    }
    float sum = reduce_add(acc[s][0]);
    for (int64_t t = i; t < k; ++t) sum += x[t] * bf16::to_f32(w[s * stride * ldw + t]);
    sums[s] = sum;
  }
}

inline void store_past_caches(float* p, float v) {
  _mm_stream_si32(reinterpret_cast<int*>(p), std::bit_cast<int>(v));
}

void gemv_bf16_one_token(const GemvArgs& a) {
  const auto* x = static_cast<const float*>(a.xp);
  const auto* w = static_cast<const uint16_t*>(a.w);
  const int64_t len = a.n / kOneTokenStreams;
  float sums[kOneTokenStreams];
  for (int64_t j = 0; j < len; ++j) {
    one_token_rows<kOneTokenStreams>(x, a.k, w + j * a.ldw, a.ldw, len, sums);
    for (int s = 0; s < kOneTokenStreams; ++s) {
      const int64_t o = s * len + j;
      store_past_caches(a.y + o, a.bias != nullptr ? sums[s] + a.bias[o] : sums[s]);
    }
  }
  for (int64_t o = len * kOneTokenStreams; o < a.n; ++o) {
    one_token_rows<1>(x, a.k, w + o * a.ldw, a.ldw, 1, sums);
    store_past_caches(a.y + o, a.bias != nullptr ? sums[0] + a.bias[o] : sums[0]);
  }
  // The stores above are weakly ordered: complete them before the caller (or the pool's
  // completion flag) lets another thread read y.
  _mm_sfence();
}

}  // namespace

void gemv_bf16_avx512(const GemvArgs& a) {
  if (a.tokens == 1) {
    gemv_bf16_one_token(a);
  } else {
    gemv_rows<Vec16, uint16_t>(a);
  }
}

void gemv_f32_avx512(const GemvArgs& a) {
  gemv_rows<Vec16, float>(a);
}

void gemv_t_bf16_avx512(const GemvTArgs& a) {
  gemv_t_rows<Vec16>(a);
}

}  // namespace ctxpar::kernels::detail
