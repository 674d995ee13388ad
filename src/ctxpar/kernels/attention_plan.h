// Internal: the attention work of one call as groups of query rows that share their keys,
// and the runner that splits it into jobs (attention_kernel.h) on a thread pool.
#pragma once

#include <cstdint>
#include <vector>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/thread_pool.h"
#include "ctxpar/kernels/attention_kernel.h"

namespace ctxpar::kernels::detail {

// Query rows [first_row, first_row + rows) of the plan attend keys [0, num_keys) of `keys`
// (KV head h of the group at + h·{k,v}_head_stride bytes; rows grouped by head).
struct AttnGroup {
  KeyRows keys;
  int64_t num_keys = 0;
  int64_t first_row = 0;
  int rows = 0;  // 1..kMaxJobRows
  int kv_heads = 1;
  int64_t k_head_stride = 0;
  int64_t v_head_stride = 0;
};

struct AttnPlan {
  KvDType dtype = KvDType::kF32;
  int64_t dk = 0;
  int64_t dv = 0;
  bool v_in_k_row = false;
  float scale = 1.0f;
  std::vector<AttnGroup> groups;
  // One entry per query row, in group order.
  std::vector<const float*> q;       // → dk f32
  std::vector<float*> out;           // → dv f32
  std::vector<float*> lse;           // → one f32
  std::vector<int64_t> row_key_end;  // empty, or per row: keys at or past it are masked

  // Appends a row; returns its index.
  int64_t add_row(const float* q_row, float* out_row, float* lse_ptr) {
    q.push_back(q_row);
    out.push_back(out_row);
    lse.push_back(lse_ptr);
    return static_cast<int64_t>(q.size()) - 1;
  }
};

// Runs every group with the kernel of `isa`. With more than one thread, groups whose share of
// the work is large are split along their keys into chunks (each a job writing a partial),
// and the chunk partials are merged with the merge code (merge_kernel.h); a group of several
// KV heads with too few keys for that is first split between its heads. Every row's out and
// lse are written.
void run_attention_plan(const AttnPlan& plan, ThreadPool& pool, Isa isa);

}  // namespace ctxpar::kernels::detail
