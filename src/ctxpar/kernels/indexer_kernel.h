// Internal: the per-ISA inner loop of the indexer scores (indexer.h), instantiated from one
// template (indexer_kernel_impl.h) in indexer_kernel_{scalar,avx2,avx512}.cc.
#pragma once

#include <cstdint>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/tensor.h"

namespace ctxpar::kernels::detail {

struct IndexerKernels {
  // out[j] = Σ_{h < heads} w[h] · ReLU(q[h, :] · key_j) for num_keys f32 key rows
  // key_j = keys + j·key_stride, each of dim values.
  // q: [padded_heads, dim] f32 contiguous, padded_heads = heads rounded up to 4, pad rows
  // zero; w: [heads]. The value for a key depends only on (q, w, key_j): keys are scored in
  // pairs and alone by the same per-key sequence of operations.
  void (*score_rows)(const float* q, const float* w, int64_t heads, int64_t dim, const float* keys,
                     int64_t key_stride, int64_t num_keys, float* out);
};

// Shapes and indices of indexer_scores (shared by the fast and the reference versions, so both
// accept exactly the same inputs); throws ctxpar::Error naming the bad value.
struct IndexerDims {
  int64_t tokens = 0, heads = 0, dim = 0, rows_per_block = 0, num_blocks = 0, columns = 0;
};
IndexerDims check_indexer_args(const Tensor& q, const Tensor& weights, const Tensor& key_cache,
                               const Tensor& block_tables, const Tensor& token_req,
                               const Tensor& key_lens, const Tensor& scores);

const IndexerKernels& indexer_kernels(Isa isa);  // throws if the CPU lacks isa

extern const IndexerKernels kIndexerKernelsScalar;
extern const IndexerKernels kIndexerKernelsAvx2;
extern const IndexerKernels kIndexerKernelsAvx512;

}  // namespace ctxpar::kernels::detail
