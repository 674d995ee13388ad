#include "block_plan.h"

#include <algorithm>
#include <memory>
#include <numeric>
#include <random>

#include "ctxpar/core/error.h"
#include "ctxpar/kv/block_pool.h"
#include "ctxpar/kv/block_table.h"

namespace ctxpar::test_support {

std::vector<PlannedStep> plan_block_tables(const std::vector<int64_t>& total_len,
                                           const std::vector<ScheduleStep>& steps,
                                           const kv::DcpLayout& layout, int32_t num_blocks,
                                           uint32_t seed) {
  kv::BlockPool pool(num_blocks);
  std::vector<int32_t> perm(static_cast<size_t>(num_blocks));
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937 rng(seed);
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<std::unique_ptr<kv::BlockTable>> tables(total_len.size());
  std::vector<int64_t> computed(total_len.size(), 0);
  std::vector<PlannedStep> plan;
  for (const ScheduleStep& step : steps) {
    PlannedStep p;
    for (const auto& [id, n] : step) {
      const auto u = static_cast<size_t>(id);
      if (!tables[u]) tables[u] = std::make_unique<kv::BlockTable>(pool, layout);
      CTXPAR_CHECK(tables[u]->grow(computed[u] + n), "test block pool of {} blocks too small",
                   num_blocks);
      attention::ScheduledRequest r;
      r.num_computed = computed[u];
      r.num_scheduled = n;
      for (int32_t b : tables[u]->ids()) r.block_table.push_back(perm[static_cast<size_t>(b)]);
      p.requests.push_back(std::move(r));
      p.request_ids.push_back(id);
      computed[u] += n;
    }
    for (const auto& [id, n] : step) {
      const auto u = static_cast<size_t>(id);
      if (computed[u] == total_len[u]) tables[u]->release();
    }
    plan.push_back(std::move(p));
  }
  return plan;
}

}  // namespace ctxpar::test_support
