#include "ctxpar/kernels/indexer.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/core/half.h"
#include "ctxpar/kernels/indexer_kernel.h"
#include "ctxpar/kernels/isa_dispatch.h"

namespace ctxpar::kernels {
namespace detail {

IndexerDims check_indexer_args(const Tensor& q, const Tensor& weights, const Tensor& key_cache,
                               const Tensor& block_tables, const Tensor& token_req,
                               const Tensor& key_lens, const Tensor& scores) {
  CTXPAR_CHECK(q.defined() && q.ndim() == 3 && q.dtype() == DType::kF32 && q.stride(2) == 1,
               "indexer q is {}; expected float32 [tokens, H, D] with a contiguous last dim",
               q.defined() ? q.describe() : "undefined");
  IndexerDims d;
  d.tokens = q.size(0);
  d.heads = q.size(1);
  d.dim = q.size(2);
  CTXPAR_CHECK(d.heads >= 1 && d.dim >= 1, "indexer q {} needs H >= 1 and D >= 1", q.describe());
  CTXPAR_CHECK(weights.defined() && weights.ndim() == 2 && weights.dtype() == DType::kF32 &&
                   weights.size(0) == d.tokens && weights.size(1) == d.heads &&
                   weights.stride(1) == 1,
               "indexer weights are {}; expected float32 [{}, {}] with a contiguous last dim",
               weights.defined() ? weights.describe() : "undefined", d.tokens, d.heads);
  CTXPAR_CHECK(key_cache.defined() && key_cache.ndim() == 3 &&
                   (key_cache.dtype() == DType::kF32 || key_cache.dtype() == DType::kBF16) &&
                   key_cache.size(2) == d.dim && key_cache.stride(2) == 1 && key_cache.size(1) >= 1,
               "indexer key_cache is {}; expected float32 or bfloat16 [num_blocks, R >= 1, {}] "
               "with a contiguous last dim",
               key_cache.defined() ? key_cache.describe() : "undefined", d.dim);
  d.num_blocks = key_cache.size(0);
  d.rows_per_block = key_cache.size(1);
  CTXPAR_CHECK(block_tables.defined() && block_tables.ndim() == 2 &&
                   block_tables.dtype() == DType::kI32 && block_tables.stride(1) == 1,
               "indexer block_tables are {}; expected int32 [num_reqs, max_blocks]",
               block_tables.defined() ? block_tables.describe() : "undefined");
  const auto check_per_token = [&](const Tensor& x, const char* name) {
    CTXPAR_CHECK(x.defined() && x.ndim() == 1 && x.dtype() == DType::kI32 && x.size(0) == d.tokens,
                 "indexer {} is {}; expected int32 [{}]", name,
                 x.defined() ? x.describe() : "undefined", d.tokens);
  };
  check_per_token(token_req, "token_req");
  check_per_token(key_lens, "key_lens");
  CTXPAR_CHECK(scores.defined() && scores.ndim() == 2 && scores.dtype() == DType::kF32 &&
                   scores.size(0) == d.tokens && (scores.stride(1) == 1 || scores.size(1) <= 1),
               "indexer scores are {}; expected float32 [{}, n] with a contiguous last dim",
               scores.defined() ? scores.describe() : "undefined", d.tokens);
  d.columns = scores.size(1);
  const int64_t num_reqs = block_tables.size(0), max_blocks = block_tables.size(1);
  for (int64_t t = 0; t < d.tokens; ++t) {
    const int32_t req = token_req.data<int32_t>()[t * token_req.stride(0)];
    const int32_t len = key_lens.data<int32_t>()[t * key_lens.stride(0)];
    CTXPAR_CHECK(req >= 0 && req < num_reqs, "indexer token {} has request {}; valid: [0, {})", t,
                 req, num_reqs);
    CTXPAR_CHECK(len >= 0 && len <= d.columns && len <= max_blocks * d.rows_per_block,
                 "indexer token {} has {} keys; valid: [0, min(scores columns {}, block table "
                 "capacity {})]",
                 t, len, d.columns, max_blocks * d.rows_per_block);
    const int32_t* table = block_tables.data<int32_t>() + req * block_tables.stride(0);
    const int64_t blocks = (len + d.rows_per_block - 1) / d.rows_per_block;
    for (int64_t b = 0; b < blocks; ++b) {
      CTXPAR_CHECK(table[b] >= 0 && table[b] < d.num_blocks,
                   "indexer token {} reads block table entry {} of request {} = {}; valid block "
                   "ids: [0, {})",
                   t, b, req, table[b], d.num_blocks);
    }
  }
  return d;
}

const IndexerKernels& indexer_kernels(Isa isa) {
  return *for_isa(isa, &kIndexerKernelsScalar, &kIndexerKernelsAvx2, &kIndexerKernelsAvx512);
}

}  // namespace detail

namespace {

// Tokens of one request scored together, so each key row is read from memory once for all of
// them (neighbouring prefill tokens share almost all their keys).
constexpr int64_t kTokensPerGroup = 8;
// Keys per task: enough work to amortize the task, few enough rows (256 × D floats) to stay
// in L2 while the group's tokens reuse them.
constexpr int64_t kKeysPerTask = 256;

struct TokenGroup {
  int64_t first, last;  // tokens [first, last)
  int64_t req;
  int64_t max_keys;
};

}  // namespace

void indexer_scores(const Tensor& q, const Tensor& weights, const Tensor& key_cache,
                    const Tensor& block_tables, const Tensor& token_req, const Tensor& key_lens,
                    Tensor& scores, ThreadPool& pool) {
  indexer_scores(q, weights, key_cache, block_tables, token_req, key_lens, scores, pool,
                 active_isa());
}

void indexer_scores(const Tensor& q, const Tensor& weights, const Tensor& key_cache,
                    const Tensor& block_tables, const Tensor& token_req, const Tensor& key_lens,
                    Tensor& scores, ThreadPool& pool, Isa isa) {
  const detail::IndexerDims d =
      detail::check_indexer_args(q, weights, key_cache, block_tables, token_req, key_lens, scores);
  const detail::IndexerKernels& kernels = detail::indexer_kernels(isa);
  const auto req_of = [&](int64_t t) { return token_req.data<int32_t>()[t * token_req.stride(0)]; };
  const auto len_of = [&](int64_t t) { return key_lens.data<int32_t>()[t * key_lens.stride(0)]; };

  std::vector<TokenGroup> groups;
  for (int64_t t = 0; t < d.tokens;) {
    TokenGroup g{t, t + 1, req_of(t), len_of(t)};
    while (g.last < d.tokens && g.last - g.first < kTokensPerGroup && req_of(g.last) == g.req) {
      g.max_keys = std::max<int64_t>(g.max_keys, len_of(g.last));
      ++g.last;
    }
    groups.push_back(g);
    t = g.last;
  }
  struct Task {
    int64_t group, begin, end;  // keys [begin, end) of the group's tokens
  };
  std::vector<Task> tasks;
  for (int64_t g = 0; g < static_cast<int64_t>(groups.size()); ++g) {
    for (int64_t k = 0; k < groups[g].max_keys; k += kKeysPerTask) {
      tasks.push_back({g, k, std::min(groups[g].max_keys, k + kKeysPerTask)});
    }
  }

  const int64_t padded_heads = (d.heads + 3) / 4 * 4;
  const bool bf16_keys = key_cache.dtype() == DType::kBF16;
  const auto* cache = static_cast<const uint8_t*>(key_cache.raw());
  const int64_t elem = static_cast<int64_t>(key_cache.element_size());
  const int64_t block_bytes = key_cache.stride(0) * elem, row_bytes = key_cache.stride(1) * elem;
  // Per thread: the group's queries padded to whole head quads, weights, bf16 rows as f32.
  struct Scratch {
    std::vector<float> q, w, rows;
  };
  std::vector<Scratch> scratch(static_cast<size_t>(pool.num_threads()));

  pool.run(static_cast<int64_t>(tasks.size()), [&](int64_t task_index, int thread) {
    const Task& task = tasks[static_cast<size_t>(task_index)];
    const TokenGroup& g = groups[static_cast<size_t>(task.group)];
    Scratch& s = scratch[static_cast<size_t>(thread)];
    const int64_t n_tok = g.last - g.first;
    s.q.assign(static_cast<size_t>(n_tok * padded_heads * d.dim), 0.0f);
    s.w.resize(static_cast<size_t>(n_tok * d.heads));
    for (int64_t i = 0; i < n_tok; ++i) {
      const int64_t t = g.first + i;
      for (int64_t h = 0; h < d.heads; ++h) {
        const float* src = q.data<float>() + t * q.stride(0) + h * q.stride(1);
        std::copy(src, src + d.dim, s.q.data() + (i * padded_heads + h) * d.dim);
        s.w[static_cast<size_t>(i * d.heads + h)] =
            weights.data<float>()[t * weights.stride(0) + h];
      }
    }
    const int32_t* table = block_tables.data<int32_t>() + g.req * block_tables.stride(0);
    // Runs of consecutive key rows inside one cache block.
    for (int64_t key = task.begin; key < task.end;) {
      const int64_t block = key / d.rows_per_block, offset = key % d.rows_per_block;
      const int64_t run = std::min(task.end - key, d.rows_per_block - offset);
      const uint8_t* first_row = cache + table[block] * block_bytes + offset * row_bytes;
      const float* rows = reinterpret_cast<const float*>(first_row);
      int64_t stride = key_cache.stride(1);
      if (bf16_keys) {
        s.rows.resize(static_cast<size_t>(run * d.dim));
        for (int64_t r = 0; r < run; ++r) {
          const auto* src = reinterpret_cast<const uint16_t*>(first_row + r * row_bytes);
          float* dst = s.rows.data() + r * d.dim;
          for (int64_t e = 0; e < d.dim; ++e) dst[e] = bf16::to_f32(src[e]);
        }
        rows = s.rows.data();
        stride = d.dim;
      }
      for (int64_t i = 0; i < n_tok; ++i) {
        const int64_t t = g.first + i;
        const int64_t mine = std::min<int64_t>(run, len_of(t) - key);
        if (mine <= 0) continue;
        kernels.score_rows(s.q.data() + i * padded_heads * d.dim, s.w.data() + i * d.heads, d.heads,
                           d.dim, rows, stride, mine,
                           scores.data<float>() + t * scores.stride(0) + key);
      }
      key += run;
    }
  });

  for (int64_t t = 0; t < d.tokens; ++t) {
    float* row = scores.data<float>() + t * scores.stride(0);
    std::fill(row + len_of(t), row + d.columns, -std::numeric_limits<float>::infinity());
  }
}

}  // namespace ctxpar::kernels
