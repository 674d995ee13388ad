// The fast attention entry points: check the inputs, describe the work as groups of query
// rows sharing their keys (attention_plan.h), run it.
#include "ctxpar/kernels/attention.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/attention_check.h"
#include "ctxpar/kernels/attention_plan.h"

namespace ctxpar::kernels {
namespace {

using detail::AttnGroup;
using detail::AttnPlan;
using detail::i32_at;
using detail::KeyRows;
using detail::kMaxJobRows;

void check_scale(float scale) {
  CTXPAR_CHECK(std::isfinite(scale), "scale {} must be finite", scale);
}

const char* byte_ptr(const Tensor& t) {
  return static_cast<const char*>(t.raw());
}
int64_t byte_stride(const Tensor& t, int dim) {
  return t.stride(dim) * static_cast<int64_t>(t.element_size());
}

// Row pointers into [tokens, H, d] tensors and [tokens, H] lse.
const float* q_row(const Tensor& q, int64_t t, int64_t h) {
  return q.data<float>() + t * q.stride(0) + h * q.stride(1);
}
float* out_row(Tensor& out, int64_t t, int64_t h) {
  return out.data<float>() + t * out.stride(0) + h * out.stride(1);
}
float* lse_ptr(Tensor& lse, int64_t t, int64_t h) {
  return lse.data<float>() + t * lse.stride(0) + h * lse.stride(1);
}

AttnPlan make_plan(detail::KvDType dtype, int64_t dk, int64_t dv, bool v_in_k_row, float scale) {
  AttnPlan plan;
  plan.dtype = dtype;
  plan.dk = dk;
  plan.dv = dv;
  plan.v_in_k_row = v_in_k_row;
  plan.scale = scale;
  return plan;
}

// Adds the groups of tokens [t0, t1), which share their keys (num_keys of them). Query head
// h reads KV head h / (hq / hkv). A group holds the query heads of as many consecutive KV
// heads as fit a job (a token's KV heads lie side by side, so one pass over the keys reads
// them together), or a chunk of kMaxJobRows query heads of one KV head when a KV head has
// more. keys_of(kvh) gives the KeyRows of KV head kvh; head_stride(kind) the byte distance
// between KV heads of K (kind 0) and V (kind 1). If causal_first >= 0, token t sees keys
// < t - causal_first + 1.
template <class KeysOfHead>
void add_token_groups(AttnPlan& plan, const Tensor& q, Tensor& out, Tensor& lse, int64_t t0,
                      int64_t t1, int64_t hq, int64_t hkv, int64_t num_keys, KeysOfHead keys_of,
                      int64_t k_head_stride, int64_t v_head_stride, int64_t causal_first) {
  const int64_t group = hq / hkv;
  const int64_t tokens = t1 - t0;
  const int64_t heads_per_group =
      std::clamp<int64_t>(kMaxJobRows / std::max<int64_t>(1, tokens * group), 1, hkv);
  const int64_t head_chunk = std::min<int64_t>(group, kMaxJobRows);
  for (int64_t kv0 = 0; kv0 < hkv; kv0 += heads_per_group) {
    const int64_t kvn = std::min(heads_per_group, hkv - kv0);
    for (int64_t h0 = 0; h0 < group; h0 += head_chunk) {
      const int64_t hn = std::min<int64_t>(head_chunk, group - h0);
      AttnGroup g;
      g.keys = keys_of(kv0);
      g.num_keys = num_keys;
      g.first_row = static_cast<int64_t>(plan.q.size());
      g.rows = static_cast<int>(kvn * tokens * hn);
      g.kv_heads = static_cast<int>(kvn);
      g.k_head_stride = k_head_stride;
      g.v_head_stride = v_head_stride;
      for (int64_t kvh = kv0; kvh < kv0 + kvn; ++kvh) {
        for (int64_t t = t0; t < t1; ++t) {
          for (int64_t h = kvh * group + h0; h < kvh * group + h0 + hn; ++h) {
            plan.add_row(q_row(q, t, h), out_row(out, t, h), lse_ptr(lse, t, h));
            if (causal_first >= 0) plan.row_key_end.push_back(t - causal_first + 1);
          }
        }
      }
      plan.groups.push_back(g);
    }
  }
}

// Tokens per group so that a group's rows (tokens × query heads of a KV head) fit a job.
int64_t tokens_per_group(int64_t hq, int64_t hkv) {
  return std::max<int64_t>(1, kMaxJobRows / (hq / hkv));
}

KeyRows paged_keys(const PagedKvView& kv, const detail::PagedDims& d, const Tensor& block_tables,
                   int64_t req, int64_t kvh) {
  KeyRows keys;
  keys.k = byte_ptr(kv.k_cache) + kvh * byte_stride(kv.k_cache, 2);
  keys.v = byte_ptr(kv.v_cache) + kvh * byte_stride(kv.v_cache, 2);
  keys.k_block_stride = byte_stride(kv.k_cache, 0);
  keys.v_block_stride = byte_stride(kv.v_cache, 0);
  keys.k_row_stride = byte_stride(kv.k_cache, 1);
  keys.v_row_stride = byte_stride(kv.v_cache, 1);
  keys.block_table = block_tables.data<int32_t>() + req * block_tables.stride(0);
  keys.block_size = d.block_size;
  return keys;
}

// Selected attention for an already checked kv view (shared by the dense-cache and MLA forms).
void run_selected(const Tensor& q, const PagedKvView& kv, const detail::PagedDims& d,
                  const Tensor& block_tables, const Tensor& token_req, const Tensor& indices,
                  float scale, Tensor& out, Tensor& lse, ThreadPool& pool, Isa isa) {
  detail::check_indices(d, block_tables, token_req, indices);
  // Valid indices of each token, compacted in order (-1 holes dropped).
  std::vector<int32_t> compact;
  compact.reserve(static_cast<size_t>(indices.numel()));
  std::vector<int64_t> begin(d.tokens + 1, 0);
  for (int64_t t = 0; t < d.tokens; ++t) {
    for (int64_t j = 0; j < indices.size(1); ++j) {
      const int32_t li = i32_at(indices, t, j);
      if (li >= 0) compact.push_back(li);
    }
    begin[t + 1] = static_cast<int64_t>(compact.size());
  }
  AttnPlan plan = make_plan(d.dtype, d.dk, d.dv, d.v_in_k_row, scale);
  for (int64_t t = 0; t < d.tokens; ++t) {
    const int64_t req = i32_at(token_req, t);
    add_token_groups(
        plan, q, out, lse, t, t + 1, d.hq, d.hkv, begin[t + 1] - begin[t],
        [&](int64_t kvh) {
          KeyRows keys = paged_keys(kv, d, block_tables, req, kvh);
          keys.indices = compact.data() + begin[t];
          return keys;
        },
        byte_stride(kv.k_cache, 2), byte_stride(kv.v_cache, 2), -1);
  }
  detail::run_attention_plan(plan, pool, isa);
}

void run_dense(const Tensor& q, const PagedKvView& kv, const detail::PagedDims& d,
               const Tensor& block_tables, const Tensor& token_req, const Tensor& key_lens,
               float scale, Tensor& out, Tensor& lse, ThreadPool& pool, Isa isa) {
  detail::check_key_lens(d, block_tables, token_req, key_lens);
  AttnPlan plan = make_plan(d.dtype, d.dk, d.dv, d.v_in_k_row, scale);
  const int64_t per_group = tokens_per_group(d.hq, d.hkv);
  // Neighbouring tokens of one request with the same key count (a prefill chunk's context
  // part) share their keys: one group reads each K/V row once for all of them.
  for (int64_t t0 = 0; t0 < d.tokens;) {
    const int32_t req = i32_at(token_req, t0);
    const int32_t n = i32_at(key_lens, t0);
    int64_t t1 = t0 + 1;
    while (t1 < d.tokens && t1 - t0 < per_group && i32_at(token_req, t1) == req &&
           i32_at(key_lens, t1) == n) {
      ++t1;
    }
    add_token_groups(
        plan, q, out, lse, t0, t1, d.hq, d.hkv, n,
        [&](int64_t kvh) { return paged_keys(kv, d, block_tables, req, kvh); },
        byte_stride(kv.k_cache, 2), byte_stride(kv.v_cache, 2), -1);
    t0 = t1;
  }
  detail::run_attention_plan(plan, pool, isa);
}

// Causal (keys of a query's own sequence up to itself) or full varlen attention over
// contiguous k/v rows.
void run_varlen(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_cu,
                const Tensor& k_cu, float scale, Tensor& out, Tensor& lse, ThreadPool& pool,
                Isa isa, bool causal) {
  check_scale(scale);
  const detail::VarlenDims d = detail::check_varlen(q, k, v, q_cu, k_cu, out, lse, causal);
  AttnPlan plan = make_plan(d.dtype, d.dk, d.dv, false, scale);
  const int64_t per_group = tokens_per_group(d.hq, d.hkv);
  for (int64_t s = 0; s < d.num_seqs; ++s) {
    const int64_t qb = i32_at(q_cu, s), qe = i32_at(q_cu, s + 1);
    const int64_t kb = i32_at(k_cu, s), ke = i32_at(k_cu, s + 1);
    const auto keys_of = [&](int64_t kvh) {
      KeyRows keys;
      keys.k = byte_ptr(k) + kb * byte_stride(k, 0) + kvh * byte_stride(k, 1);
      keys.v = byte_ptr(v) + kb * byte_stride(v, 0) + kvh * byte_stride(v, 1);
      keys.k_row_stride = byte_stride(k, 0);
      keys.v_row_stride = byte_stride(v, 0);
      return keys;
    };
    for (int64_t t0 = qb; t0 < qe; t0 += per_group) {
      const int64_t t1 = std::min(qe, t0 + per_group);
      // Causal: the group's last token sees the most keys; earlier ones are masked per row.
      const int64_t num_keys = causal ? t1 - qb : ke - kb;
      add_token_groups(plan, q, out, lse, t0, t1, d.hq, d.hkv, num_keys, keys_of, byte_stride(k, 1),
                       byte_stride(v, 1), causal ? qb : -1);
    }
  }
  detail::run_attention_plan(plan, pool, isa);
}

}  // namespace

bool attention_rounds_weights(Isa isa, DType kv_dtype) {
  return kv_dtype == DType::kBF16 && (isa == Isa::kAvx512 || isa == Isa::kAmx) &&
         detail::avx512_attention_job() == &detail::run_attention_job_avx512bf16;
}

void paged_attention(const Tensor& q, const PagedKvView& kv, const Tensor& block_tables,
                     const Tensor& token_req, const Tensor& key_lens, float scale, Tensor& out,
                     Tensor& lse, ThreadPool& pool) {
  paged_attention(q, kv, block_tables, token_req, key_lens, scale, out, lse, pool, active_isa());
}

void paged_attention(const Tensor& q, const PagedKvView& kv, const Tensor& block_tables,
                     const Tensor& token_req, const Tensor& key_lens, float scale, Tensor& out,
                     Tensor& lse, ThreadPool& pool, Isa isa) {
  check_scale(scale);
  const detail::PagedDims d = detail::check_paged(q, kv, block_tables, token_req, out, lse);
  run_dense(q, kv, d, block_tables, token_req, key_lens, scale, out, lse, pool, isa);
}

void paged_attention_selected(const Tensor& q, const PagedKvView& kv, const Tensor& block_tables,
                              const Tensor& token_req, const Tensor& indices, float scale,
                              Tensor& out, Tensor& lse, ThreadPool& pool) {
  paged_attention_selected(q, kv, block_tables, token_req, indices, scale, out, lse, pool,
                           active_isa());
}

void paged_attention_selected(const Tensor& q, const PagedKvView& kv, const Tensor& block_tables,
                              const Tensor& token_req, const Tensor& indices, float scale,
                              Tensor& out, Tensor& lse, ThreadPool& pool, Isa isa) {
  check_scale(scale);
  const detail::PagedDims d = detail::check_paged(q, kv, block_tables, token_req, out, lse);
  run_selected(q, kv, d, block_tables, token_req, indices, scale, out, lse, pool, isa);
}

void paged_mla_attention(const Tensor& q, const Tensor& latent_cache, int64_t kv_lora_rank,
                         const Tensor& block_tables, const Tensor& token_req,
                         const Tensor& key_lens, float scale, Tensor& out, Tensor& lse,
                         ThreadPool& pool) {
  paged_mla_attention(q, latent_cache, kv_lora_rank, block_tables, token_req, key_lens, scale, out,
                      lse, pool, active_isa());
}

void paged_mla_attention(const Tensor& q, const Tensor& latent_cache, int64_t kv_lora_rank,
                         const Tensor& block_tables, const Tensor& token_req,
                         const Tensor& key_lens, float scale, Tensor& out, Tensor& lse,
                         ThreadPool& pool, Isa isa) {
  const PagedKvView kv = detail::mla_kv_view(q, latent_cache, kv_lora_rank, out);
  paged_attention(q, kv, block_tables, token_req, key_lens, scale, out, lse, pool, isa);
}

void paged_mla_attention_selected(const Tensor& q, const Tensor& latent_cache, int64_t kv_lora_rank,
                                  const Tensor& block_tables, const Tensor& token_req,
                                  const Tensor& indices, float scale, Tensor& out, Tensor& lse,
                                  ThreadPool& pool) {
  paged_mla_attention_selected(q, latent_cache, kv_lora_rank, block_tables, token_req, indices,
                               scale, out, lse, pool, active_isa());
}

void paged_mla_attention_selected(const Tensor& q, const Tensor& latent_cache, int64_t kv_lora_rank,
                                  const Tensor& block_tables, const Tensor& token_req,
                                  const Tensor& indices, float scale, Tensor& out, Tensor& lse,
                                  ThreadPool& pool, Isa isa) {
  const PagedKvView kv = detail::mla_kv_view(q, latent_cache, kv_lora_rank, out);
  paged_attention_selected(q, kv, block_tables, token_req, indices, scale, out, lse, pool, isa);
}

void causal_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_seqlens,
                      float scale, Tensor& out, Tensor& lse, ThreadPool& pool) {
  causal_attention(q, k, v, cu_seqlens, scale, out, lse, pool, active_isa());
}

void causal_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& cu_seqlens,
                      float scale, Tensor& out, Tensor& lse, ThreadPool& pool, Isa isa) {
  run_varlen(q, k, v, cu_seqlens, cu_seqlens, scale, out, lse, pool, isa, true);
}

void varlen_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_cu_seqlens,
                      const Tensor& k_cu_seqlens, float scale, Tensor& out, Tensor& lse,
                      ThreadPool& pool) {
  varlen_attention(q, k, v, q_cu_seqlens, k_cu_seqlens, scale, out, lse, pool, active_isa());
}

void varlen_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_cu_seqlens,
                      const Tensor& k_cu_seqlens, float scale, Tensor& out, Tensor& lse,
                      ThreadPool& pool, Isa isa) {
  run_varlen(q, k, v, q_cu_seqlens, k_cu_seqlens, scale, out, lse, pool, isa, false);
}

}  // namespace ctxpar::kernels
