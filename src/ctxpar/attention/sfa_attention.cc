#include "ctxpar/attention/sfa_attention.h"

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/attention.h"
#include "ctxpar/kernels/batched_matmul.h"
#include "ctxpar/kernels/kv_cache_ops.h"

namespace ctxpar::attention {

SfaAttention::SfaAttention(const MlaDims& dims, Tensor latent_cache, Tensor kv_b_proj,
                           ThreadPool& pool)
    : dims_(dims),
      latent_cache_(std::move(latent_cache)),
      kv_b_proj_(std::move(kv_b_proj)),
      pool_(pool) {
  check_mla_operands(dims_, latent_cache_, kv_b_proj_, "SFA");
}

void SfaAttention::forward(const AttentionMetadata& md, const Tensor& q, const Tensor& kv_c,
                           const Tensor& k_pe, const Tensor& selected, Tensor& out) {
  const int64_t tokens = md.common.num_tokens;
  CTXPAR_CHECK(q.ndim() == 3 && q.size(0) == tokens, "SFA q {} must have the step's {} tokens",
               q.describe(), tokens);
  // Write first: the new tokens are keys of themselves and of later tokens of the step.
  write(md, kv_c, k_pe);
  forward_cached(md, q, selected, out);
}

void SfaAttention::write(const AttentionMetadata& md, const Tensor& kv_c, const Tensor& k_pe) {
  const CommonAttentionMetadata& c = md.common;
  const int64_t tokens = c.num_tokens, lora = dims_.kv_lora_rank;
  CTXPAR_CHECK(kv_c.ndim() == 2 && kv_c.size(0) == tokens && kv_c.size(1) == lora,
               "SFA kv_c {} must be [{}, {}]", kv_c.describe(), tokens, lora);
  CTXPAR_CHECK(k_pe.ndim() == 2 && k_pe.size(0) == tokens && k_pe.size(1) == dims_.qk_rope_head_dim,
               "SFA k_pe {} must be [{}, {}]", k_pe.describe(), tokens, dims_.qk_rope_head_dim);
  Tensor cache_c = latent_cache_.slice(2, 0, lora);
  Tensor cache_pe = latent_cache_.slice(2, lora, dims_.latent_dim());
  kernels::write_cache_rows(kv_c, c.slot_mapping, cache_c);
  kernels::write_cache_rows(k_pe, c.slot_mapping, cache_pe);
}

void SfaAttention::forward_cached(const AttentionMetadata& md, const Tensor& q,
                                  const Tensor& selected, Tensor& out) {
  const int64_t tokens = md.dsa_cp ? md.dsa_cp->local->common.num_tokens : md.common.num_tokens;
  const int64_t h = dims_.num_heads, lora = dims_.kv_lora_rank;
  const int64_t nope = dims_.qk_nope_head_dim, v = dims_.v_head_dim;
  CTXPAR_CHECK(
      q.ndim() == 3 && q.size(0) == tokens && q.size(1) == h && q.size(2) == dims_.qk_head_dim(),
      "SFA q {} must be [{}, {}, {}]", q.describe(), tokens, h, dims_.qk_head_dim());
  CTXPAR_CHECK(selected.ndim() == 2 && selected.size(0) == tokens &&
                   selected.dtype() == DType::kI32 && selected.is_contiguous(),
               "SFA selected positions {} must be contiguous int32 [{}, k]", selected.describe(),
               tokens);
  CTXPAR_CHECK(out.ndim() == 3 && out.size(0) == tokens && out.size(1) == h && out.size(2) == v,
               "SFA out {} must be [{}, {}, {}]", out.describe(), tokens, h, v);

  // Per-head views of kv_b_proj: [H_l, nope + v, kv_lora].
  const Tensor w = kv_b_proj_.view({h, nope + v, lora});
  // q_abs = [q_nope · W_UK ‖ q_pe]: [tokens, H_l, kv_lora + rope].
  Tensor q_abs = Tensor::empty({tokens, h, dims_.latent_dim()}, DType::kF32);
  if (tokens > 0) {
    Tensor q_lat = q_abs.slice(2, 0, lora).transpose(0, 1);  // [H_l, tokens, kv_lora]
    kernels::batched_matmul(q.slice(2, 0, nope).transpose(0, 1), w.slice(1, 0, nope), q_lat, pool_);
    q_abs.slice(2, lora, dims_.latent_dim()).copy_from(q.slice(2, nope, dims_.qk_head_dim()));
  }

  // attend() runs even without query rows: a DCP variant may owe its group a collective.
  Tensor o_lat = Tensor::empty({tokens, h, lora}, DType::kF32);
  Tensor lse = Tensor::empty({tokens, h}, DType::kF32);
  attend(md, q_abs, selected, o_lat, lse);
  if (tokens == 0) return;

  // out_h = o_lat_h · W_UV_hᵀ: [H_l, tokens, kv_lora] · [H_l, kv_lora, v].
  Tensor out_t = out.transpose(0, 1);
  kernels::batched_matmul(o_lat.transpose(0, 1), w.slice(1, nope, nope + v).transpose(1, 2), out_t,
                          pool_);
}

void SfaAttention::attend(const AttentionMetadata& md, const Tensor& q_abs, const Tensor& selected,
                          Tensor& o_lat, Tensor& lse) {
  CTXPAR_CHECK(md.layout.dcp_size() == 1,
               "SfaAttention reads positions as local indices, which holds only without DCP "
               "(N = {}); use SfaDcpAttention",
               md.layout.dcp_size());
  CTXPAR_CHECK(!md.dsa_cp,
               "SfaAttention attends all of a step's tokens; a DSA-CP step (token slices per "
               "rank) needs SfaDsaCpAttention");
  if (q_abs.size(0) == 0) return;
  attend_local(md, q_abs, selected, o_lat, lse);
}

void SfaAttention::attend_local(const AttentionMetadata& md, const Tensor& q_abs,
                                const Tensor& local_indices, Tensor& o_lat, Tensor& lse) {
  kernels::paged_mla_attention_selected(q_abs, latent_cache_, dims_.kv_lora_rank,
                                        md.common.block_tables, md.common.token_req, local_indices,
                                        dims_.scale, o_lat, lse, pool_);
}

}  // namespace ctxpar::attention
