#include "ctxpar/kernels/attention_plan.h"

#include <algorithm>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/isa_dispatch.h"
#include "ctxpar/kernels/linear_matmul_cache.h"
#include "ctxpar/kernels/merge_kernel.h"

namespace ctxpar::kernels::detail {
namespace {

// Fewer keys than this per chunk and the merge and per-job setup stop paying off.
constexpr int64_t kMinChunkKeys = 256;
// Jobs per thread to aim for when splitting, so dynamic scheduling can even out the load.
constexpr int64_t kJobsPerThread = 4;

// Per-thread job scratch, kept across calls: a decode step calls attention once per layer,
// and a fresh allocation of this size would be fresh (faulting) pages every time. Bounded by
// attn_scratch_layout() of the largest head dims seen (about 0.6 MB for MLA's 576/512).
float* thread_scratch(int64_t floats) {
  thread_local std::vector<float> scratch;
  if (static_cast<int64_t>(scratch.size()) < floats) scratch.resize(static_cast<size_t>(floats));
  return scratch.data();
}

AttnJobFn job_fn(Isa isa) {
  return for_isa<AttnJobFn>(isa, &run_attention_job_scalar, &run_attention_job_avx2,
                            avx512_attention_job(), &run_attention_job_amx);
}

struct JobSpec {
  int64_t group;
  int64_t key_begin;
  int64_t key_end;
  int64_t part_base;  // split groups: float offset of this chunk's partial o rows; else -1
  int64_t lse_base;   // split groups: float offset of this chunk's partial lses
  int64_t ptr_base;   // split groups: offset into the job pointer arrays
};

// The work of one job-sized share of `groups` when `threads` threads run them.
double job_unit(const std::vector<AttnGroup>& groups, int threads) {
  double total = 0;
  for (const AttnGroup& g : groups) total += static_cast<double>(g.rows) * g.num_keys;
  return total / static_cast<double>(kJobsPerThread * threads);
}

// The jobs a group's share of the work asks for (at least 1), and the most key chunks its
// keys allow (chunks of fewer than kMinChunkKeys do not pay).
struct GroupShare {
  int64_t jobs;
  int64_t max_key_chunks;
};
GroupShare group_share(const AttnGroup& g, double unit) {
  const double share = unit > 0 ? static_cast<double>(g.rows) * g.num_keys / unit : 0;
  return {std::max<int64_t>(1, static_cast<int64_t>(share + 0.5)),
          std::max<int64_t>(1, g.num_keys / kMinChunkKeys)};
}

// Where a group of several KV heads asks for more jobs than its keys can be cut into, it is
// cut into groups of fewer heads first (cuts between heads need no merge): a decode token of
// a short sequence is one group of all KV heads, and cut only along the keys it stayed one job
// while the other threads waited. Returns `groups` itself when no group is cut (the common
// case, no copy), else `split` filled with the cut groups.
const std::vector<AttnGroup>& split_by_heads(const std::vector<AttnGroup>& groups, int threads,
                                             std::vector<AttnGroup>& split) {
  if (threads == 1) return groups;
  const double unit = job_unit(groups, threads);
  const auto parts_of = [&](const AttnGroup& g) {
    const GroupShare s = group_share(g, unit);
    if (g.kv_heads == 1 || s.jobs <= s.max_key_chunks) return 1;
    return static_cast<int>(
        std::min<int64_t>(g.kv_heads, (s.jobs + s.max_key_chunks - 1) / s.max_key_chunks));
  };
  if (std::all_of(groups.begin(), groups.end(),
                  [&](const AttnGroup& g) { return parts_of(g) == 1; }))
    return groups;
  for (const AttnGroup& g : groups) {
    const int parts = parts_of(g);
    const int head_rows = g.rows / g.kv_heads;
    for (int p = 0; p < parts; ++p) {
      // Heads [h0, h1) of the group, as even as they go.
      const int h0 = g.kv_heads * p / parts, h1 = g.kv_heads * (p + 1) / parts;
      AttnGroup part = g;
      part.keys.k += h0 * g.k_head_stride;
      part.keys.v += h0 * g.v_head_stride;
      part.first_row = g.first_row + int64_t{h0} * head_rows;
      part.rows = (h1 - h0) * head_rows;
      part.kv_heads = h1 - h0;
      split.push_back(part);
    }
  }
  return split;
}

// Chunk length (in keys, a multiple of the key tile) for each group.
std::vector<int64_t> chunk_lengths(const std::vector<AttnGroup>& groups, int threads) {
  std::vector<int64_t> len(groups.size());
  const double unit = job_unit(groups, threads);
  for (size_t i = 0; i < groups.size(); ++i) {
    const AttnGroup& g = groups[i];
    int64_t chunks = 1;
    if (threads > 1) {
      const GroupShare s = group_share(g, unit);
      chunks = std::min(s.jobs, s.max_key_chunks);
    }
    const int64_t per = (g.num_keys + chunks - 1) / chunks;
    len[i] = std::max<int64_t>(kKeyTile, (per + kKeyTile - 1) / kKeyTile * kKeyTile);
  }
  return len;
}

}  // namespace

AttnJobFn avx512_attention_job() {
  static const AttnJobFn fn =
      bf16_dot_fast() ? &run_attention_job_avx512bf16 : &run_attention_job_avx512;
  return fn;
}

void run_attention_plan(const AttnPlan& plan, ThreadPool& pool, Isa isa) {
  const AttnJobFn fn = job_fn(isa);
  const MergeKernels& merge = merge_kernels(isa);
  const int threads = pool.num_threads();
  std::vector<AttnGroup> split;
  const std::vector<AttnGroup>& groups = split_by_heads(plan.groups, threads, split);
  const std::vector<int64_t> len = chunk_lengths(groups, threads);

  std::vector<JobSpec> jobs;
  std::vector<int64_t> split_groups;  // groups whose chunks need a merge
  std::vector<int64_t> split_first_job;
  int64_t part_floats = 0, lse_floats = 0, ptrs = 0;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const AttnGroup& g = groups[gi];
    const int64_t chunks = std::max<int64_t>(1, (g.num_keys + len[gi] - 1) / len[gi]);
    if (chunks == 1) {
      jobs.push_back({static_cast<int64_t>(gi), 0, g.num_keys, -1, -1, -1});
      continue;
    }
    split_groups.push_back(static_cast<int64_t>(gi));
    split_first_job.push_back(static_cast<int64_t>(jobs.size()));
    for (int64_t c = 0; c < chunks; ++c) {
      jobs.push_back({static_cast<int64_t>(gi), c * len[gi],
                      std::min(g.num_keys, (c + 1) * len[gi]), part_floats, lse_floats, ptrs});
      part_floats += g.rows * plan.dv;
      lse_floats += g.rows;
      ptrs += g.rows;
    }
  }

  // Partials of split groups: o rows [rows, dv] and lses [rows] per chunk, and the pointer
  // arrays the jobs write through.
  std::vector<float> part_o(static_cast<size_t>(part_floats));
  std::vector<float> part_lse(static_cast<size_t>(lse_floats));
  std::vector<float*> job_out(static_cast<size_t>(ptrs));
  std::vector<float*> job_lse(static_cast<size_t>(ptrs));
  for (const JobSpec& j : jobs) {
    if (j.part_base < 0) continue;
    const int rows = groups[j.group].rows;
    for (int r = 0; r < rows; ++r) {
      job_out[j.ptr_base + r] = part_o.data() + j.part_base + r * plan.dv;
      job_lse[j.ptr_base + r] = part_lse.data() + j.lse_base + r;
    }
  }

  // Largest jobs first, so the dynamic schedule ends with small ones.
  std::vector<int64_t> order(jobs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const auto work = [&](const JobSpec& j) {
      return (j.key_end - j.key_begin + 1) * groups[j.group].rows;
    };
    return work(jobs[a]) > work(jobs[b]);
  });

  const int64_t scratch_floats = attn_scratch_layout(plan.dk, plan.dv).total;
  pool.run(static_cast<int64_t>(jobs.size()), [&](int64_t task, int) {
    const JobSpec& j = jobs[order[task]];
    const AttnGroup& g = groups[j.group];
    AttnJob job;
    job.dtype = plan.dtype;
    job.dk = plan.dk;
    job.dv = plan.dv;
    job.v_in_k_row = plan.v_in_k_row;
    job.keys = g.keys;
    job.kv_heads = g.kv_heads;
    job.k_head_stride = g.k_head_stride;
    job.v_head_stride = g.v_head_stride;
    job.key_begin = j.key_begin;
    job.key_end = j.key_end;
    job.rows = g.rows;
    job.q = plan.q.data() + g.first_row;
    job.row_key_end = plan.row_key_end.empty() ? nullptr : plan.row_key_end.data() + g.first_row;
    job.scale = plan.scale;
    job.prefetch_to_l2 = cpu_features().amd;
    if (j.part_base < 0) {
      job.out = plan.out.data() + g.first_row;
      job.lse = plan.lse.data() + g.first_row;
    } else {
      job.out = job_out.data() + j.ptr_base;
      job.lse = job_lse.data() + j.ptr_base;
    }
    fn(job, thread_scratch(scratch_floats));
  });

  // Merge the chunk partials of each split group into its rows.
  pool.run(static_cast<int64_t>(split_groups.size()), [&](int64_t task, int) {
    const AttnGroup& g = groups[split_groups[task]];
    const int64_t first = split_first_job[task];
    int64_t chunks = 0;
    while (first + chunks < static_cast<int64_t>(jobs.size()) &&
           jobs[first + chunks].group == split_groups[task]) {
      ++chunks;
    }
    std::vector<float> lses(chunks), w(chunks), used_w(chunks);
    std::vector<const float*> used(chunks);
    for (int r = 0; r < g.rows; ++r) {
      for (int64_t c = 0; c < chunks; ++c) lses[c] = *job_lse[jobs[first + c].ptr_base + r];
      const float merged = merge_weights(static_cast<int>(chunks), lses.data(), w.data());
      int n = 0;
      for (int64_t c = 0; c < chunks; ++c) {
        if (w[c] == 0.0f) continue;
        used[n] = job_out[jobs[first + c].ptr_base + r];
        used_w[n++] = w[c];
      }
      merge.weighted_sum(n, used.data(), used_w.data(), plan.dv, plan.out[g.first_row + r]);
      *plan.lse[g.first_row + r] = merged;
    }
  });
}

}  // namespace ctxpar::kernels::detail
