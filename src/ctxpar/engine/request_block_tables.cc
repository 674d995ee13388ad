#include "ctxpar/engine/request_block_tables.h"

#include <algorithm>

#include "ctxpar/core/error.h"

namespace ctxpar::engine {

namespace {

bool contains(const std::vector<RequestHandle>& handles, RequestHandle r) {
  return std::find(handles.begin(), handles.end(), r) != handles.end();
}

}  // namespace

RequestBlockTables::RequestBlockTables(int64_t tokens_per_block)
    : tokens_per_block_(tokens_per_block) {
  CTXPAR_CHECK(tokens_per_block >= 1, "tokens per block {} must be >= 1", tokens_per_block);
}

std::vector<attention::ScheduledRequest> RequestBlockTables::apply(const StepPlan& plan) {
  // Check every entry first, so a bad plan leaves the tables as they were.
  for (const StepPlan::Entry& e : plan.entries) {
    const auto it = tables_.find(e.request);
    const bool dropped = contains(plan.preempted, e.request) || contains(plan.finished, e.request);
    CTXPAR_CHECK(e.new_table || (it != tables_.end() && !dropped),
                 "step plan: request {} extends a table this rank does not hold; its first entry "
                 "must carry new_table",
                 e.request);
    const size_t held = e.new_table ? 0 : it->second.size();
    const int64_t tokens = e.num_computed + static_cast<int64_t>(e.token_ids.size());
    const auto blocks = static_cast<int64_t>(held + e.new_block_ids.size());
    CTXPAR_CHECK(blocks * tokens_per_block_ >= tokens,
                 "step plan: request {} has {} blocks of {} positions for {} tokens", e.request,
                 blocks, tokens_per_block_, tokens);
  }
  for (const RequestHandle r : plan.finished) tables_.erase(r);
  for (const RequestHandle r : plan.preempted) tables_.erase(r);
  std::vector<attention::ScheduledRequest> batch;
  batch.reserve(plan.entries.size());
  for (const StepPlan::Entry& e : plan.entries) {
    std::vector<int32_t>& table = tables_[e.request];
    if (e.new_table) table.clear();
    table.insert(table.end(), e.new_block_ids.begin(), e.new_block_ids.end());
    batch.push_back(attention::ScheduledRequest{
        .num_computed = e.num_computed,
        .num_scheduled = static_cast<int64_t>(e.token_ids.size()),
        .block_table = table,
    });
  }
  return batch;
}

std::span<const int32_t> RequestBlockTables::table(RequestHandle request) const {
  const auto it = tables_.find(request);
  if (it == tables_.end()) return {};
  return it->second;
}

}  // namespace ctxpar::engine
