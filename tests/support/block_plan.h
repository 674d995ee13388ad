// The scheduler's side of an oracle test, run once: a schedule of (request, new tokens) steps
// turned into per-step attention batches with block tables from a pool whose ids are randomly
// renumbered (so no test passes by accident on the identity table). Identical for every rank.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ctxpar/attention/attention_metadata.h"
#include "ctxpar/kv/dcp_layout.h"

namespace ctxpar::test_support {

// One step: (request id, new tokens) in batch order.
using ScheduleStep = std::vector<std::pair<int, int64_t>>;

struct PlannedStep {
  std::vector<attention::ScheduledRequest> requests;
  std::vector<int> request_ids;
};

// total_len[i]: every token request i will have; a request's blocks return to the pool after
// the step that completes it (they are written during it). Throws if num_blocks is too small.
std::vector<PlannedStep> plan_block_tables(const std::vector<int64_t>& total_len,
                                           const std::vector<ScheduleStep>& steps,
                                           const kv::DcpLayout& layout, int32_t num_blocks,
                                           uint32_t seed);

}  // namespace ctxpar::test_support
