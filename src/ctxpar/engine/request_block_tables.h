// RequestBlockTables: the block table of every request a rank is running, rebuilt from the
// deltas of each StepPlan (DESIGN.md §6). Every rank applies the same plans in the same order,
// so all of them hold the tables rank 0's scheduler holds, without the plan carrying them.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "ctxpar/attention/attention_metadata.h"
#include "ctxpar/engine/step_plan.h"

namespace ctxpar::engine {

class RequestBlockTables {
 public:
  // tokens_per_block: positions of one virtual block, B·N (>= 1).
  explicit RequestBlockTables(int64_t tokens_per_block);

  // Applies `plan` (finished, then preempted, then entries) and returns the attention layer's
  // input for it, entry for entry. Throws ctxpar::Error, changing nothing, for a plan that does
  // not fit the tables: an entry that extends a table this rank does not hold (unknown,
  // preempted or finished request without new_table), or a table too short for its tokens.
  std::vector<attention::ScheduledRequest> apply(const StepPlan& plan);

  // The table of a running request; empty for an unknown (or preempted) one.
  std::span<const int32_t> table(RequestHandle request) const;
  size_t num_requests() const { return tables_.size(); }

 private:
  int64_t tokens_per_block_;
  std::unordered_map<RequestHandle, std::vector<int32_t>> tables_;
};

}  // namespace ctxpar::engine
