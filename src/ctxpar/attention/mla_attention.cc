#include "ctxpar/attention/mla_attention.h"

#include <algorithm>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/attention.h"
#include "ctxpar/kernels/batched_matmul.h"
#include "ctxpar/kernels/kv_cache_ops.h"
#include "ctxpar/kernels/merge.h"

namespace ctxpar::attention {
namespace {

// Prefix sums rebased to the first prefill request: [num_prefill_reqs + 1] i32.
Tensor prefill_query_start(const CommonAttentionMetadata& c) {
  const int64_t first = c.num_decode_reqs;
  Tensor qs = Tensor::empty({c.num_reqs - first + 1}, DType::kI32);
  const int32_t* all = c.query_start.data<int32_t>();
  for (int64_t i = first; i <= c.num_reqs; ++i) {
    qs.data<int32_t>()[i - first] = all[i] - all[first];
  }
  return qs;
}

}  // namespace

void check_mla_operands(const MlaDims& dims, const Tensor& latent_cache, const Tensor& kv_b_proj,
                        std::string_view what) {
  CTXPAR_CHECK(dims.num_heads > 0 && dims.kv_lora_rank > 0 && dims.qk_nope_head_dim > 0 &&
                   dims.qk_rope_head_dim > 0 && dims.v_head_dim > 0 && dims.max_context_chunk > 0,
               "{} dims must be positive: heads {}, kv_lora_rank {}, nope {}, rope {}, v {}, "
               "max_context_chunk {}",
               what, dims.num_heads, dims.kv_lora_rank, dims.qk_nope_head_dim,
               dims.qk_rope_head_dim, dims.v_head_dim, dims.max_context_chunk);
  CTXPAR_CHECK(latent_cache.ndim() == 3 && latent_cache.size(2) == dims.latent_dim(),
               "{} latent cache {} must be [num_blocks, block_size, {}]", what,
               latent_cache.describe(), dims.latent_dim());
  CTXPAR_CHECK(
      kv_b_proj.ndim() == 2 &&
          kv_b_proj.size(0) == dims.num_heads * (dims.qk_nope_head_dim + dims.v_head_dim) &&
          kv_b_proj.size(1) == dims.kv_lora_rank,
      "{} kv_b_proj slice {} must be [{} heads × ({} + {}), {}]", what, kv_b_proj.describe(),
      dims.num_heads, dims.qk_nope_head_dim, dims.v_head_dim, dims.kv_lora_rank);
}

MlaAttention::MlaAttention(const MlaDims& dims, Tensor latent_cache, Tensor kv_b_proj,
                           ThreadPool& pool)
    : dims_(dims),
      latent_cache_(std::move(latent_cache)),
      kv_b_proj_(std::move(kv_b_proj)),
      pool_(pool) {
  check_mla_operands(dims_, latent_cache_, kv_b_proj_, "MLA");
}

void MlaAttention::forward(const AttentionMetadata& md, const Tensor& q, const Tensor& kv_c,
                           const Tensor& k_pe, Tensor& out) {
  const CommonAttentionMetadata& c = md.common;
  const int64_t tokens = c.num_tokens, h = dims_.num_heads;
  CTXPAR_CHECK(
      q.ndim() == 3 && q.size(0) == tokens && q.size(1) == h && q.size(2) == dims_.qk_head_dim(),
      "MLA q {} must be [{}, {}, {}]", q.describe(), tokens, h, dims_.qk_head_dim());
  CTXPAR_CHECK(kv_c.ndim() == 2 && kv_c.size(0) == tokens && kv_c.size(1) == dims_.kv_lora_rank,
               "MLA kv_c {} must be [{}, {}]", kv_c.describe(), tokens, dims_.kv_lora_rank);
  CTXPAR_CHECK(k_pe.ndim() == 2 && k_pe.size(0) == tokens && k_pe.size(1) == dims_.qk_rope_head_dim,
               "MLA k_pe {} must be [{}, {}]", k_pe.describe(), tokens, dims_.qk_rope_head_dim);
  CTXPAR_CHECK(out.ndim() == 3 && out.size(0) == tokens && out.size(1) == h &&
                   out.size(2) == dims_.v_head_dim,
               "MLA out {} must be [{}, {}, {}]", out.describe(), tokens, h, dims_.v_head_dim);

  Tensor cache_c = latent_cache_.slice(2, 0, dims_.kv_lora_rank);
  Tensor cache_pe = latent_cache_.slice(2, dims_.kv_lora_rank, dims_.latent_dim());
  kernels::write_cache_rows(kv_c, c.slot_mapping, cache_c);
  kernels::write_cache_rows(k_pe, c.slot_mapping, cache_pe);

  const int64_t decodes = c.num_decode_tokens();
  if (decodes > 0) {
    Tensor out_d = out.slice(0, 0, decodes);
    forward_decode(md, q.slice(0, 0, decodes), out_d);
  }
  if (tokens > decodes) {
    Tensor out_p = out.slice(0, decodes, tokens);
    forward_prefill(md, q.slice(0, decodes, tokens), kv_c.slice(0, decodes, tokens),
                    k_pe.slice(0, decodes, tokens), out_p);
  }
}

void MlaAttention::forward_decode(const AttentionMetadata& md, const Tensor& q, Tensor& out) {
  const int64_t n = q.size(0), h = dims_.num_heads, lora = dims_.kv_lora_rank;
  const int64_t nope = dims_.qk_nope_head_dim, v = dims_.v_head_dim;
  // Per-head views of kv_b_proj: [H_l, nope + v, kv_lora].
  const Tensor w = kv_b_proj_.view({h, nope + v, lora});

  // q_abs = [q_nope · W_UK ‖ q_pe]: [n, H_l, kv_lora + rope].
  Tensor q_abs = Tensor::empty({n, h, dims_.latent_dim()}, DType::kF32);
  Tensor q_lat = q_abs.slice(2, 0, lora).transpose(0, 1);  // [H_l, n, kv_lora]
  kernels::batched_matmul(q.slice(2, 0, nope).transpose(0, 1), w.slice(1, 0, nope), q_lat, pool_);
  q_abs.slice(2, lora, dims_.latent_dim()).copy_from(q.slice(2, nope, dims_.qk_head_dim()));

  Tensor o_lat = Tensor::empty({n, h, lora}, DType::kF32);
  Tensor lse = Tensor::empty({n, h}, DType::kF32);
  attend_decode(md, q_abs, o_lat, lse);

  // out_h = o_lat_h · W_UV_hᵀ: [H_l, n, kv_lora] · [H_l, kv_lora, v].
  Tensor out_t = out.transpose(0, 1);
  kernels::batched_matmul(o_lat.transpose(0, 1), w.slice(1, nope, nope + v).transpose(1, 2), out_t,
                          pool_);
}

void MlaAttention::attend_decode(const AttentionMetadata& md, const Tensor& q_abs, Tensor& o_lat,
                                 Tensor& lse) {
  const int64_t n = q_abs.size(0);
  attend_latent(md, q_abs, md.common.token_req.slice(0, 0, n),
                md.common.causal_key_lens.slice(0, 0, n), o_lat, lse);
}

void MlaAttention::attend_latent(const AttentionMetadata& md, const Tensor& q_abs,
                                 const Tensor& token_req, const Tensor& key_lens, Tensor& o_lat,
                                 Tensor& lse) {
  kernels::paged_mla_attention(q_abs, latent_cache_, dims_.kv_lora_rank, md.common.block_tables,
                               token_req, key_lens, dims_.scale, o_lat, lse, pool_);
}

void MlaAttention::expand(const Tensor& latent_c, const Tensor& k_pe, Tensor& k, Tensor& kv) const {
  const int64_t rows = latent_c.size(0), h = dims_.num_heads;
  const int64_t nope = dims_.qk_nope_head_dim, v = dims_.v_head_dim;
  // kv = c · kv_b_projᵀ: [1, rows, kv_lora] · [1, kv_lora, H_l·(nope + v)].
  Tensor kv_flat = kv.view({1, rows, h * (nope + v)});
  kernels::batched_matmul(latent_c.unsqueeze(0), kv_b_proj_.transpose(0, 1).unsqueeze(0), kv_flat,
                          pool_);
  k.slice(2, 0, nope).copy_from(kv.slice(2, 0, nope));
  // k_pe is shared by all heads.
  for (int64_t head = 0; head < h; ++head) {
    k.select(1, head).slice(1, nope, dims_.qk_head_dim()).copy_from(k_pe);
  }
}

void MlaAttention::forward_prefill(const AttentionMetadata& md, const Tensor& q, const Tensor& kv_c,
                                   const Tensor& k_pe, Tensor& out) {
  const CommonAttentionMetadata& c = md.common;
  const int64_t n = q.size(0), h = dims_.num_heads, lora = dims_.kv_lora_rank;
  const int64_t nope = dims_.qk_nope_head_dim, v = dims_.v_head_dim, qk = dims_.qk_head_dim();
  const Tensor query_start = prefill_query_start(c);

  // New part: causal over this step's tokens in the expanded form, k and v in bf16 when the
  // latent cache is bf16 or e4m3 (the prefill then runs the bf16 kernels; expand writes k
  // converted). They are projections of the latent, not cached values, so an e4m3 cache does
  // not round them to e4m3.
  const DType expanded = latent_cache_.dtype() == DType::kF32 ? DType::kF32 : DType::kBF16;
  const auto values = [&](const Tensor& kv_part) {
    return expanded == DType::kF32 ? kv_part.slice(2, nope, nope + v)
                                   : kv_part.slice(2, nope, nope + v).to(DType::kBF16);
  };
  Tensor k = Tensor::empty({n, h, qk}, expanded);
  Tensor kv = Tensor::empty({n, h, nope + v}, DType::kF32);
  expand(kv_c, k_pe, k, kv);
  Tensor lse = Tensor::empty({n, h}, DType::kF32);
  kernels::causal_attention(q, k, values(kv), query_start, dims_.scale, out, lse, pool_);

  // Context part, in windows of local indices so the gathered rows stay bounded.
  int64_t with_context = 0, longest = 0;
  for (int64_t i = c.num_decode_reqs; i < c.num_reqs; ++i) {
    // Rank 0 stores the most rows of any context (local_len is non-increasing in rank).
    const int64_t rows = md.layout.local_len(c.num_computed[i], 0);
    with_context += rows > 0 ? 1 : 0;
    longest = std::max(longest, rows);
  }
  if (longest == 0) return;
  const int64_t window =
      std::max<int64_t>(1, dims_.max_context_chunk / (context_group_size() * with_context));
  Tensor chunk_out = Tensor::empty({n, h, v}, DType::kF32);
  Tensor chunk_lse = Tensor::empty({n, h}, DType::kF32);
  for (int64_t first = 0; first < longest; first += window) {
    ContextChunk chunk = load_context(md, first, window);
    const int64_t rows = chunk.rows.size(0);
    if (rows == 0) continue;
    Tensor ck = Tensor::empty({rows, h, qk}, expanded);
    Tensor ckv = Tensor::empty({rows, h, nope + v}, DType::kF32);
    expand(chunk.rows.slice(1, 0, lora), chunk.rows.slice(1, lora, dims_.latent_dim()), ck, ckv);
    Tensor key_start = Tensor::empty({static_cast<int64_t>(chunk.key_start.size())}, DType::kI32);
    std::copy(chunk.key_start.begin(), chunk.key_start.end(), key_start.data<int32_t>());
    kernels::varlen_attention(q, ck, values(ckv), query_start, key_start, dims_.scale, chunk_out,
                              chunk_lse, pool_);
    kernels::merge_attn_states(out, lse, chunk_out, chunk_lse);
  }
}

ContextChunk MlaAttention::load_context(const AttentionMetadata& md, int64_t first,
                                        int64_t window) {
  const CommonAttentionMetadata& c = md.common;
  ContextChunk chunk;
  chunk.key_start.push_back(0);
  int64_t total = 0;
  std::vector<int64_t> counts;
  for (int64_t i = c.num_decode_reqs; i < c.num_reqs; ++i) {
    const int64_t local = c.local_context_lens[static_cast<size_t>(i)];
    counts.push_back(std::clamp<int64_t>(local - first, 0, window));
    total += counts.back();
    chunk.key_start.push_back(static_cast<int32_t>(total));
  }
  chunk.rows = Tensor::empty({total, dims_.latent_dim()}, DType::kF32);
  const int64_t max_blocks = c.block_tables.size(1);
  for (int64_t i = c.num_decode_reqs, j = 0; i < c.num_reqs; ++i, ++j) {
    const std::span<const int32_t> table(c.block_tables.data<int32_t>() + i * max_blocks,
                                         static_cast<size_t>(max_blocks));
    Tensor dst = chunk.rows.slice(0, chunk.key_start[j], chunk.key_start[j + 1]);
    kernels::read_cache_rows(latent_cache_, table, first, counts[static_cast<size_t>(j)], dst);
  }
  return chunk;
}

}  // namespace ctxpar::attention
