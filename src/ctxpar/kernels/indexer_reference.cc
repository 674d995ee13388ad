// The indexer score as its definition, in double: the specification the fast kernel is
// tested against.
#include <limits>

#include "ctxpar/kernels/indexer.h"
#include "ctxpar/kernels/indexer_kernel.h"

namespace ctxpar::kernels {

void indexer_scores_reference(const Tensor& q, const Tensor& weights, const Tensor& key_cache,
                              const Tensor& block_tables, const Tensor& token_req,
                              const Tensor& key_lens, Tensor& scores) {
  const detail::IndexerDims d =
      detail::check_indexer_args(q, weights, key_cache, block_tables, token_req, key_lens, scores);
  for (int64_t t = 0; t < d.tokens; ++t) {
    const int64_t req = token_req.data<int32_t>()[t * token_req.stride(0)];
    const int64_t len = key_lens.data<int32_t>()[t * key_lens.stride(0)];
    const int32_t* table = block_tables.data<int32_t>() + req * block_tables.stride(0);
    float* row = scores.data<float>() + t * scores.stride(0);
    for (int64_t s = 0; s < d.columns; ++s) {
      if (s >= len) {
        row[s] = -std::numeric_limits<float>::infinity();
        continue;
      }
      const int64_t block = table[s / d.rows_per_block], offset = s % d.rows_per_block;
      double score = 0;
      for (int64_t h = 0; h < d.heads; ++h) {
        double dot = 0;
        for (int64_t e = 0; e < d.dim; ++e) {
          dot += q.item_as_double({t, h, e}) * key_cache.item_as_double({block, offset, e});
        }
        score += weights.item_as_double({t, h}) * (dot > 0 ? dot : 0.0);
      }
      row[s] = static_cast<float>(score);
    }
  }
}

}  // namespace ctxpar::kernels
