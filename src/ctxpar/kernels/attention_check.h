// Internal: input checks of the attention functions, shared by the fast and the reference
// versions so both accept exactly the same inputs. Each throws ctxpar::Error naming the bad
// value and what is valid.
#pragma once

#include <cstdint>

#include "ctxpar/core/tensor.h"
#include "ctxpar/kernels/attention.h"
#include "ctxpar/kernels/attention_kernel.h"

namespace ctxpar::kernels::detail {

struct PagedDims {
  int64_t tokens = 0, hq = 0, hkv = 0, dk = 0, dv = 0;
  int64_t num_blocks = 0, block_size = 0, num_reqs = 0, max_blocks = 0;
  KvDType dtype = KvDType::kF32;
  bool v_in_k_row = false;  // v_cache views the first dv values of k_cache's rows
};

// q, kv, block_tables, token_req, out, lse of the paged functions (attention.h).
PagedDims check_paged(const Tensor& q, const PagedKvView& kv, const Tensor& block_tables,
                      const Tensor& token_req, const Tensor& out, const Tensor& lse);
// key_lens [tokens] i32 in [0, max_blocks·B], and every block they cover has an id in
// [0, num_blocks).
void check_key_lens(const PagedDims& d, const Tensor& block_tables, const Tensor& token_req,
                    const Tensor& key_lens);
// indices [tokens, max_sel] i32, each -1 or in [0, max_blocks·B) with a valid block id.
void check_indices(const PagedDims& d, const Tensor& block_tables, const Tensor& token_req,
                   const Tensor& indices);
// Checks the MLA shapes and returns the latent cache as a one-head paged K/V view:
// k = rows [.., 0:D], v = rows [.., 0:kv_lora_rank].
PagedKvView mla_kv_view(const Tensor& q, const Tensor& latent_cache, int64_t kv_lora_rank,
                        const Tensor& out);

struct VarlenDims {
  int64_t q_tokens = 0, k_tokens = 0, hq = 0, hkv = 0, dk = 0, dv = 0, num_seqs = 0;
  KvDType dtype = KvDType::kF32;
};
// causal: q_cu and k_cu are the same cu_seqlens and q, k have the same token count.
VarlenDims check_varlen(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& q_cu,
                        const Tensor& k_cu, const Tensor& out, const Tensor& lse, bool causal);

// Element reads of (possibly strided) i32 tensors.
inline int32_t i32_at(const Tensor& t, int64_t i) {
  return t.data<int32_t>()[i * t.stride(0)];
}
inline int32_t i32_at(const Tensor& t, int64_t i, int64_t j) {
  return t.data<int32_t>()[i * t.stride(0) + j * t.stride(1)];
}

}  // namespace ctxpar::kernels::detail
