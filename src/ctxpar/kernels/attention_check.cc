#include "ctxpar/kernels/attention_check.h"

#include <cmath>

#include "ctxpar/core/error.h"

namespace ctxpar::kernels::detail {
namespace {

void check_tensor(const Tensor& t, const char* name, DType dtype, int ndim, const char* layout) {
  CTXPAR_CHECK(t.defined(), "{} is undefined; expected {} {}", name, dtype_name(dtype), layout);
  CTXPAR_CHECK(t.dtype() == dtype && t.ndim() == ndim, "{} is {}; expected {} {}", name,
               t.describe(), dtype_name(dtype), layout);
}

// Row pointers assume the last dim is contiguous.
void check_last_dim_contiguous(const Tensor& t, const char* name) {
  CTXPAR_CHECK(t.size(-1) <= 1 || t.stride(-1) == 1,
               "{} {} needs a contiguous last dimension, got stride {}", name, t.describe(),
               t.stride(-1));
}

KvDType kv_dtype(const Tensor& k, const Tensor& v, const char* k_name, const char* v_name) {
  CTXPAR_CHECK(k.dtype() == v.dtype(),
               "{} is {} but {} is {}; both must be float32, bfloat16 or float8_e4m3fn", k_name,
               k.describe(), v_name, v.describe());
  switch (k.dtype()) {
    case DType::kF32:
      return KvDType::kF32;
    case DType::kBF16:
      return KvDType::kBF16;
    case DType::kF8E4M3:
      return KvDType::kF8E4M3;
    default:
      break;
  }
  CTXPAR_FAIL("{} is {}; the KV dtype must be float32, bfloat16 or float8_e4m3fn", k_name,
              k.describe());
}

void check_out(const Tensor& out, const Tensor& lse, int64_t tokens, int64_t heads, int64_t dv) {
  check_tensor(out, "out", DType::kF32, 3, "[tokens, Hq, dv]");
  check_tensor(lse, "lse", DType::kF32, 2, "[tokens, Hq]");
  check_last_dim_contiguous(out, "out");
  CTXPAR_CHECK(out.shape() == (Shape{tokens, heads, dv}), "out is {}; expected [{}, {}, {}]",
               out.describe(), tokens, heads, dv);
  CTXPAR_CHECK(lse.shape() == (Shape{tokens, heads}), "lse is {}; expected [{}, {}]",
               lse.describe(), tokens, heads);
}

void check_block(const PagedDims& d, const Tensor& block_tables, int64_t req, int64_t blk,
                 int64_t token) {
  const int32_t id = i32_at(block_tables, req, blk);
  CTXPAR_CHECK(id >= 0 && id < d.num_blocks,
               "block_tables[{}][{}] = {} (used by token {}) is not a block id in [0, {})", req,
               blk, id, token, d.num_blocks);
}

// [cu_0 .. cu_S] with cu_0 = 0, non-decreasing, cu_S = tokens.
void check_cu(const Tensor& cu, const char* name, int64_t tokens) {
  check_tensor(cu, name, DType::kI32, 1, "[num_seqs + 1]");
  CTXPAR_CHECK(cu.size(0) >= 1, "{} is {}; it needs at least the leading 0", name, cu.describe());
  CTXPAR_CHECK(i32_at(cu, 0) == 0, "{}[0] = {}; it must be 0", name, i32_at(cu, 0));
  for (int64_t s = 1; s < cu.size(0); ++s) {
    CTXPAR_CHECK(i32_at(cu, s) >= i32_at(cu, s - 1),
                 "{}[{}] = {} < {}[{}] = {}; it must not decrease", name, s, i32_at(cu, s), name,
                 s - 1, i32_at(cu, s - 1));
  }
  CTXPAR_CHECK(i32_at(cu, cu.size(0) - 1) == tokens, "{}[{}] = {} must equal the token count {}",
               name, cu.size(0) - 1, i32_at(cu, cu.size(0) - 1), tokens);
}

}  // namespace

PagedDims check_paged(const Tensor& q, const PagedKvView& kv, const Tensor& block_tables,
                      const Tensor& token_req, const Tensor& out, const Tensor& lse) {
  check_tensor(q, "q", DType::kF32, 3, "[tokens, Hq, dk]");
  check_last_dim_contiguous(q, "q");
  const Tensor& k = kv.k_cache;
  const Tensor& v = kv.v_cache;
  CTXPAR_CHECK(k.defined() && k.ndim() == 4, "k_cache is {}; expected [num_blocks, B, Hkv, dk]",
               k.defined() ? k.describe() : "undefined");
  CTXPAR_CHECK(v.defined() && v.ndim() == 4, "v_cache is {}; expected [num_blocks, B, Hkv, dv]",
               v.defined() ? v.describe() : "undefined");
  PagedDims d;
  d.dtype = kv_dtype(k, v, "k_cache", "v_cache");
  check_last_dim_contiguous(k, "k_cache");
  check_last_dim_contiguous(v, "v_cache");
  CTXPAR_CHECK(k.size(0) == v.size(0) && k.size(1) == v.size(1) && k.size(2) == v.size(2),
               "k_cache {} and v_cache {} must agree on [num_blocks, B, Hkv]", k.describe(),
               v.describe());
  d.num_blocks = k.size(0);
  d.block_size = k.size(1);
  d.hkv = k.size(2);
  d.dk = k.size(3);
  d.dv = v.size(3);
  d.tokens = q.size(0);
  d.hq = q.size(1);
  CTXPAR_CHECK(d.block_size >= 1, "block size (k_cache dim 1) is {}; it must be >= 1",
               d.block_size);
  CTXPAR_CHECK(d.hkv >= 1 && d.hq % d.hkv == 0,
               "q has {} heads and the cache {} KV heads; Hq must be a multiple of Hkv >= 1", d.hq,
               d.hkv);
  CTXPAR_CHECK(q.size(2) == d.dk, "q is {} but k_cache rows have dk = {}", q.describe(), d.dk);
  d.v_in_k_row = k.raw() == v.raw() && d.dv <= d.dk && k.stride(0) == v.stride(0) &&
                 k.stride(1) == v.stride(1) && k.stride(2) == v.stride(2);

  check_tensor(block_tables, "block_tables", DType::kI32, 2, "[num_reqs, max_blocks]");
  check_last_dim_contiguous(block_tables, "block_tables");
  d.num_reqs = block_tables.size(0);
  d.max_blocks = block_tables.size(1);
  check_tensor(token_req, "token_req", DType::kI32, 1, "[tokens]");
  CTXPAR_CHECK(token_req.size(0) == d.tokens, "token_req is {}; expected [{}] (q's tokens)",
               token_req.describe(), d.tokens);
  for (int64_t t = 0; t < d.tokens; ++t) {
    const int32_t r = i32_at(token_req, t);
    CTXPAR_CHECK(r >= 0 && r < d.num_reqs,
                 "token_req[{}] = {} is not a row of block_tables (valid: [0, {}))", t, r,
                 d.num_reqs);
  }
  check_out(out, lse, d.tokens, d.hq, d.dv);
  return d;
}

void check_key_lens(const PagedDims& d, const Tensor& block_tables, const Tensor& token_req,
                    const Tensor& key_lens) {
  check_tensor(key_lens, "key_lens", DType::kI32, 1, "[tokens]");
  CTXPAR_CHECK(key_lens.size(0) == d.tokens, "key_lens is {}; expected [{}] (q's tokens)",
               key_lens.describe(), d.tokens);
  const int64_t capacity = d.max_blocks * d.block_size;
  for (int64_t t = 0; t < d.tokens; ++t) {
    const int32_t n = i32_at(key_lens, t);
    CTXPAR_CHECK(n >= 0 && n <= capacity,
                 "key_lens[{}] = {} is outside [0, {}] (max_blocks {} × block size {})", t, n,
                 capacity, d.max_blocks, d.block_size);
    const int64_t req = i32_at(token_req, t);
    for (int64_t b = 0; b < (n + d.block_size - 1) / d.block_size; ++b) {
      check_block(d, block_tables, req, b, t);
    }
  }
}

void check_indices(const PagedDims& d, const Tensor& block_tables, const Tensor& token_req,
                   const Tensor& indices) {
  check_tensor(indices, "indices", DType::kI32, 2, "[tokens, max_sel]");
  CTXPAR_CHECK(indices.size(0) == d.tokens, "indices is {}; expected [{}, max_sel]",
               indices.describe(), d.tokens);
  const int64_t capacity = d.max_blocks * d.block_size;
  for (int64_t t = 0; t < d.tokens; ++t) {
    const int64_t req = i32_at(token_req, t);
    for (int64_t j = 0; j < indices.size(1); ++j) {
      const int32_t li = i32_at(indices, t, j);
      if (li == -1) continue;
      CTXPAR_CHECK(li >= 0 && li < capacity,
                   "indices[{}][{}] = {} is neither -1 nor a local key index in [0, {})", t, j, li,
                   capacity);
      check_block(d, block_tables, req, li / d.block_size, t);
    }
  }
}

PagedKvView mla_kv_view(const Tensor& q, const Tensor& latent_cache, int64_t kv_lora_rank,
                        const Tensor& out) {
  CTXPAR_CHECK(latent_cache.defined() && latent_cache.ndim() == 3,
               "latent_cache is {}; expected [num_blocks, B, kv_lora_rank + rope]",
               latent_cache.defined() ? latent_cache.describe() : "undefined");
  const int64_t width = latent_cache.size(2);
  CTXPAR_CHECK(kv_lora_rank >= 1 && kv_lora_rank <= width,
               "kv_lora_rank {} must be in [1, {}] (latent_cache row width)", kv_lora_rank, width);
  CTXPAR_CHECK(q.defined() && q.ndim() == 3 && q.size(2) == width,
               "q is {}; expected [tokens, H, {}] to match latent_cache {}",
               q.defined() ? q.describe() : "undefined", width, latent_cache.describe());
  CTXPAR_CHECK(out.defined() && out.ndim() == 3 && out.size(2) == kv_lora_rank,
               "out is {}; expected [tokens, H, {}] (kv_lora_rank)",
               out.defined() ? out.describe() : "undefined", kv_lora_rank);
  const Tensor rows = latent_cache.unsqueeze(2);  // [num_blocks, B, 1, width]
  return PagedKvView{rows, rows.slice(3, 0, kv_lora_rank)};
}

VarlenDims check_varlen(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_cu,
                        const Tensor& k_cu, const Tensor& out, const Tensor& lse, bool causal) {
  check_tensor(q, "q", DType::kF32, 3, "[tokens, Hq, dk]");
  check_last_dim_contiguous(q, "q");
  CTXPAR_CHECK(k.defined() && k.ndim() == 3, "k is {}; expected [tokens, Hkv, dk]",
               k.defined() ? k.describe() : "undefined");
  CTXPAR_CHECK(v.defined() && v.ndim() == 3, "v is {}; expected [tokens, Hkv, dv]",
               v.defined() ? v.describe() : "undefined");
  VarlenDims d;
  d.dtype = kv_dtype(k, v, "k", "v");
  check_last_dim_contiguous(k, "k");
  check_last_dim_contiguous(v, "v");
  d.q_tokens = q.size(0);
  d.hq = q.size(1);
  d.dk = q.size(2);
  d.k_tokens = k.size(0);
  d.hkv = k.size(1);
  d.dv = v.size(2);
  CTXPAR_CHECK(k.size(2) == d.dk, "k is {} but q is {}; their head dims must match", k.describe(),
               q.describe());
  CTXPAR_CHECK(v.size(0) == d.k_tokens && v.size(1) == d.hkv,
               "v is {} but k is {}; they must agree on [tokens, Hkv]", v.describe(), k.describe());
  CTXPAR_CHECK(d.hkv >= 1 && d.hq % d.hkv == 0,
               "q has {} heads and k {}; Hq must be a multiple of Hkv >= 1", d.hq, d.hkv);
  if (causal) {
    CTXPAR_CHECK(d.k_tokens == d.q_tokens,
                 "causal attention needs one k/v row per query token: q {} but k {}", q.describe(),
                 k.describe());
  }
  check_cu(q_cu, causal ? "cu_seqlens" : "q_cu_seqlens", d.q_tokens);
  check_cu(k_cu, causal ? "cu_seqlens" : "k_cu_seqlens", d.k_tokens);
  CTXPAR_CHECK(q_cu.size(0) == k_cu.size(0),
               "q_cu_seqlens {} and k_cu_seqlens {} must list the same number of sequences",
               q_cu.describe(), k_cu.describe());
  d.num_seqs = q_cu.size(0) - 1;
  check_out(out, lse, d.q_tokens, d.hq, d.dv);
  return d;
}

}  // namespace ctxpar::kernels::detail
