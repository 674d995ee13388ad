// Internal: the indexer score loop as a template over a simd vector type (simd.h). Included
// only by indexer_kernel_{scalar,avx2,avx512}.cc; everything here has internal linkage so
// copies compiled with different ISA flags never mix at link time.
#pragma once

#include <cstdint>

#include "ctxpar/kernels/indexer_kernel.h"

namespace ctxpar::kernels::detail {
namespace {

// Scores K (1 or 2) keys against every head, four heads at a time: each step loads the K key
// vectors once and four query vectors, so 2 keys × 4 heads = 8 independent FMA chains.
// Every (key, head) dot product runs the same operations whether the key is scored in a pair
// or alone, so its bits never depend on its neighbours.
template <class V, int K>
void score_keys(const float* q, const float* w, int64_t heads, int64_t dim, const float* const* key,
                float* out) {
  constexpr int kW = V::kWidth;
  float total[K] = {};
  for (int64_t h = 0; h < heads; h += 4) {
    const float* qh = q + h * dim;
    V acc[K][4];
    for (int k = 0; k < K; ++k)
      for (int j = 0; j < 4; ++j) acc[k][j] = V::zero();
    int64_t i = 0;
    for (; i + kW <= dim; i += kW) {
      V kv[K];
      for (int k = 0; k < K; ++k) kv[k] = V::load(key[k] + i);
      for (int j = 0; j < 4; ++j) {
        const V qv = V::load(qh + j * dim + i);
        for (int k = 0; k < K; ++k) acc[k][j] = mul_add(qv, kv[k], acc[k][j]);
      }
    }
    for (int k = 0; k < K; ++k) {
      float dot[4];
      reduce_add4(acc[k][0], acc[k][1], acc[k][2], acc[k][3], dot);
      for (int64_t e = i; e < dim; ++e)
        for (int j = 0; j < 4; ++j) dot[j] += qh[j * dim + e] * key[k][e];
      for (int j = 0; j < 4 && h + j < heads; ++j) {
        total[k] += w[h + j] * (dot[j] > 0.0f ? dot[j] : 0.0f);
      }
    }
  }
  for (int k = 0; k < K; ++k) out[k] = total[k];
}

template <class V>
void score_rows(const float* q, const float* w, int64_t heads, int64_t dim, const float* keys,
                int64_t key_stride, int64_t num_keys, float* out) {
  int64_t j = 0;
  for (; j + 2 <= num_keys; j += 2) {
    const float* pair[2] = {keys + j * key_stride, keys + (j + 1) * key_stride};
    score_keys<V, 2>(q, w, heads, dim, pair, out + j);
  }
  if (j < num_keys) {
    const float* one[1] = {keys + j * key_stride};
    score_keys<V, 1>(q, w, heads, dim, one, out + j);
  }
}

template <class V>
IndexerKernels make_indexer_kernels() {
  return IndexerKernels{&score_rows<V>};
}

}  // namespace
}  // namespace ctxpar::kernels::detail
