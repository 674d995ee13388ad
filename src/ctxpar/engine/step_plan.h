// StepPlan: what rank 0 decided for one step, broadcast to every rank so all run the same
// forward pass (DESIGN.md §6). Like vLLM v1's SchedulerOutput it carries only what changed:
// each scheduled request's new tokens and new block ids, and which requests were preempted
// or finished. Every rank keeps the requests' whole block tables itself (RequestBlockTables),
// so the bytes per step grow with the new tokens and blocks, not with the contexts.
//
// Requests are named by handles, small integers StepPlanBuilder assigns on rank 0.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ctxpar/engine/scheduler.h"

namespace ctxpar::engine {

using RequestHandle = uint64_t;

struct StepPlan {
  enum class Command : uint8_t { kRun = 0, kStop = 1 };

  struct Entry {
    RequestHandle request = 0;
    int64_t num_computed = 0;        // tokens already in the KV cache
    std::vector<int32_t> token_ids;  // the new tokens, at positions num_computed...
    // True: the request's table is new_block_ids (a new request, or one resumed after
    // preemption). False: new_block_ids extend the table the ranks already hold for it.
    bool new_table = false;
    std::vector<int32_t> new_block_ids;
    bool samples = false;     // this entry's last token's logits are wanted
    bool all_logits = false;  // every new token's logits are wanted (prompt logprobs)
  };

  Command command = Command::kRun;
  // Applied in this order: finished requests are forgotten, preempted ones lose their blocks
  // (they come back later with new_table), then the entries run.
  std::vector<RequestHandle> finished;
  std::vector<RequestHandle> preempted;
  std::vector<Entry> entries;  // decodes first, as scheduled

  std::vector<uint8_t> encode() const;
  // Throws ctxpar::Error on a malformed buffer (truncated, counts out of range).
  static StepPlan decode(const std::vector<uint8_t>& bytes);

  int64_t num_tokens() const;
  // Rows of logits the step returns: every token of an all_logits entry, the last token of
  // another sampling entry.
  int64_t num_logit_rows() const;
};

// Rank 0: turns each SchedulerOutput into a StepPlan, naming requests by handles (assigned on
// a request's first scheduled entry, never reused). finished(id) queues a request that left
// the scheduler (take_finished) so the next plan tells the ranks to forget it; its id may be
// reused at once for a new request, which gets a new handle.
class StepPlanBuilder {
 public:
  StepPlan build(const SchedulerOutput& output);
  void finished(const RequestId& id);
  // The handle of a request scheduled at least once and not finished; throws otherwise.
  RequestHandle handle(const RequestId& id) const;

 private:
  std::unordered_map<RequestId, RequestHandle> handles_;
  RequestHandle next_handle_ = 0;
  std::vector<RequestHandle> finished_;  // for the next plan
};

}  // namespace ctxpar::engine
