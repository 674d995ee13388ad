// Scalar double-precision attention, written for clarity: for every query row, list its key
// rows, compute all scores, then softmax and the weighted sum of values. Tests compare the
// fast kernels against these. Same input checks as the fast versions.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ctxpar/core/fp8.h"
#include "ctxpar/core/half.h"
#include "ctxpar/kernels/attention.h"
#include "ctxpar/kernels/attention_check.h"

namespace ctxpar::kernels {
namespace {

using detail::i32_at;
using detail::KvDType;

struct KeyRef {
  const void* k;
  const void* v;
};

double element(const void* row, int64_t i, KvDType dtype) {
  switch (dtype) {
    case KvDType::kBF16:
      return bf16::to_f32(static_cast<const uint16_t*>(row)[i]);
    case KvDType::kF8E4M3:
      return fp8_e4m3::to_f32(static_cast<const uint8_t*>(row)[i]);
    case KvDType::kF32:
      break;
  }
  return static_cast<const float*>(row)[i];
}

// o and lse of one query row over `keys`; no keys → o = 0, lse = -inf.
void attend_row(const float* q, const std::vector<KeyRef>& keys, int64_t dk, int64_t dv,
                KvDType dtype, double scale, float* out, float* lse) {
  if (keys.empty()) {
    for (int64_t i = 0; i < dv; ++i) out[i] = 0.0f;
    *lse = -std::numeric_limits<float>::infinity();
    return;
  }
  // A bf16 cache's scores are those of q rounded to bf16 (attention.h).
  std::vector<double> qd(static_cast<size_t>(dk));
  for (int64_t i = 0; i < dk; ++i) {
    const float x = dtype == KvDType::kBF16 ? bf16::to_f32(bf16::from_f32(q[i])) : q[i];
    qd[static_cast<size_t>(i)] = x;
  }
  std::vector<double> score(keys.size());
  double m = -std::numeric_limits<double>::infinity();
  for (size_t j = 0; j < keys.size(); ++j) {
    double dot = 0.0;
    for (int64_t i = 0; i < dk; ++i)
      dot += qd[static_cast<size_t>(i)] * element(keys[j].k, i, dtype);
    score[j] = scale * dot;
    m = std::max(m, score[j]);
  }
  double sum = 0.0;
  for (double s : score) sum += std::exp(s - m);
  std::vector<double> o(dv, 0.0);
  for (size_t j = 0; j < keys.size(); ++j) {
    const double p = std::exp(score[j] - m) / sum;
    for (int64_t i = 0; i < dv; ++i) o[i] += p * element(keys[j].v, i, dtype);
  }
  for (int64_t i = 0; i < dv; ++i) out[i] = static_cast<float>(o[i]);
  *lse = static_cast<float>(m + std::log(sum));
}

const char* row_of(const Tensor& cache, int64_t block, int64_t offset, int64_t head) {
  const int64_t e = cache.stride(0) * block + cache.stride(1) * offset + cache.stride(2) * head;
  return static_cast<const char*>(cache.raw()) + e * static_cast<int64_t>(cache.element_size());
}

// Paged attention where token t's keys are the local indices local_keys(t).
template <class LocalKeys>
void paged_reference(const Tensor& q, const PagedKvView& kv, const detail::PagedDims& d,
                     const Tensor& block_tables, const Tensor& token_req, float scale, Tensor& out,
                     Tensor& lse, LocalKeys local_keys) {
  const int64_t group = d.hq / d.hkv;
  for (int64_t t = 0; t < d.tokens; ++t) {
    const int64_t req = i32_at(token_req, t);
    const std::vector<int64_t> local = local_keys(t);
    for (int64_t h = 0; h < d.hq; ++h) {
      const int64_t kvh = h / group;
      std::vector<KeyRef> keys;
      for (int64_t li : local) {
        const int64_t block = i32_at(block_tables, req, li / d.block_size);
        const int64_t offset = li % d.block_size;
        keys.push_back(
            {row_of(kv.k_cache, block, offset, kvh), row_of(kv.v_cache, block, offset, kvh)});
      }
      attend_row(q.data<float>() + t * q.stride(0) + h * q.stride(1), keys, d.dk, d.dv, d.dtype,
                 scale, out.data<float>() + t * out.stride(0) + h * out.stride(1),
                 lse.data<float>() + t * lse.stride(0) + h * lse.stride(1));
    }
  }
}

// Varlen attention: query token t of sequence s sees keys [k_cu[s], k_cu[s] + visible(t)).
template <class Visible>
void varlen_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                      const detail::VarlenDims& d, const Tensor& q_cu, const Tensor& k_cu,
                      float scale, Tensor& out, Tensor& lse, Visible visible) {
  const int64_t group = d.hq / d.hkv;
  const auto row = [](const Tensor& x, int64_t t, int64_t h) {
    return static_cast<const char*>(x.raw()) +
           (t * x.stride(0) + h * x.stride(1)) * static_cast<int64_t>(x.element_size());
  };
  for (int64_t s = 0; s < d.num_seqs; ++s) {
    const int64_t kb = i32_at(k_cu, s);
    for (int64_t t = i32_at(q_cu, s); t < i32_at(q_cu, s + 1); ++t) {
      const int64_t n = visible(s, t);
      for (int64_t h = 0; h < d.hq; ++h) {
        std::vector<KeyRef> keys;
        for (int64_t j = kb; j < kb + n; ++j)
          keys.push_back({row(k, j, h / group), row(v, j, h / group)});
        attend_row(q.data<float>() + t * q.stride(0) + h * q.stride(1), keys, d.dk, d.dv, d.dtype,
                   scale, out.data<float>() + t * out.stride(0) + h * out.stride(1),
                   lse.data<float>() + t * lse.stride(0) + h * lse.stride(1));
      }
    }
  }
}

}  // namespace

void paged_attention_reference(const Tensor& q, const PagedKvView& kv, const Tensor& block_tables,
                               const Tensor& token_req, const Tensor& key_lens, float scale,
                               Tensor& out, Tensor& lse) {
  const detail::PagedDims d = detail::check_paged(q, kv, block_tables, token_req, out, lse);
  detail::check_key_lens(d, block_tables, token_req, key_lens);
  paged_reference(q, kv, d, block_tables, token_req, scale, out, lse, [&](int64_t t) {
    std::vector<int64_t> local(i32_at(key_lens, t));
    for (size_t j = 0; j < local.size(); ++j) local[j] = static_cast<int64_t>(j);
    return local;
  });
}

void paged_attention_selected_reference(const Tensor& q, const PagedKvView& kv,
                                        const Tensor& block_tables, const Tensor& token_req,
                                        const Tensor& indices, float scale, Tensor& out,
                                        Tensor& lse) {
  const detail::PagedDims d = detail::check_paged(q, kv, block_tables, token_req, out, lse);
  detail::check_indices(d, block_tables, token_req, indices);
  paged_reference(q, kv, d, block_tables, token_req, scale, out, lse, [&](int64_t t) {
    std::vector<int64_t> local;
    for (int64_t j = 0; j < indices.size(1); ++j) {
      if (i32_at(indices, t, j) >= 0) local.push_back(i32_at(indices, t, j));
    }
    return local;
  });
}

void paged_mla_attention_reference(const Tensor& q, const Tensor& latent_cache,
                                   int64_t kv_lora_rank, const Tensor& block_tables,
                                   const Tensor& token_req, const Tensor& key_lens, float scale,
                                   Tensor& out, Tensor& lse) {
  const PagedKvView kv = detail::mla_kv_view(q, latent_cache, kv_lora_rank, out);
  paged_attention_reference(q, kv, block_tables, token_req, key_lens, scale, out, lse);
}

void paged_mla_attention_selected_reference(const Tensor& q, const Tensor& latent_cache,
                                            int64_t kv_lora_rank, const Tensor& block_tables,
                                            const Tensor& token_req, const Tensor& indices,
                                            float scale, Tensor& out, Tensor& lse) {
  const PagedKvView kv = detail::mla_kv_view(q, latent_cache, kv_lora_rank, out);
  paged_attention_selected_reference(q, kv, block_tables, token_req, indices, scale, out, lse);
}

void causal_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                const Tensor& cu_seqlens, float scale, Tensor& out, Tensor& lse) {
  const detail::VarlenDims d =
      detail::check_varlen(q, k, v, cu_seqlens, cu_seqlens, out, lse, /*causal=*/true);
  varlen_reference(q, k, v, d, cu_seqlens, cu_seqlens, scale, out, lse,
                   [&](int64_t s, int64_t t) { return t - i32_at(cu_seqlens, s) + 1; });
}

void varlen_attention_reference(const Tensor& q, const Tensor& k, const Tensor& v,
                                const Tensor& q_cu_seqlens, const Tensor& k_cu_seqlens, float scale,
                                Tensor& out, Tensor& lse) {
  const detail::VarlenDims d = detail::check_varlen(q, k, v, q_cu_seqlens, k_cu_seqlens, out, lse,
                                                    /*causal=*/false);
  varlen_reference(
      q, k, v, d, q_cu_seqlens, k_cu_seqlens, scale, out, lse, [&](int64_t s, int64_t) {
        return static_cast<int64_t>(i32_at(k_cu_seqlens, s + 1) - i32_at(k_cu_seqlens, s));
      });
}

}  // namespace ctxpar::kernels
