// FakeModel: a deterministic stand-in for the model runner that really uses the KV cache.
//
// Each step it does what a rank does with the scheduler's output: turns it into a StepPlan
// (StepPlanBuilder), sends it through the byte encoding, and applies the plan's deltas to its
// own RequestBlockTables. Then it writes every new token (its id, position and request) into
// the cache rows the DCP layout gives it on its owner rank through those tables, and, for each
// entry that samples, reads the request's whole history back from the cache and returns
// next_token(history). So a block table that points at the wrong rows, a block owned by two
// requests, a plan delta that rebuilds the wrong table, or a recompute that does not rebuild
// the cache exactly changes the tokens (and is also caught directly by the position/request
// tags): outputs equal the reference only if the scheduler's KV bookkeeping and the plans are
// right. With prefix caching, a request reads rows another request wrote (a shared cached
// block); then the rows must still hold this request's positions, and read_tokens() lets the
// driver check they hold its tokens.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "ctxpar/engine/request_block_tables.h"
#include "ctxpar/engine/scheduler.h"
#include "ctxpar/engine/step_plan.h"
#include "ctxpar/kv/dcp_layout.h"

namespace ctxpar::engine::testing {

class FakeModel {
 public:
  // shared_blocks: requests may read rows written by others (prefix caching).
  FakeModel(const kv::DcpLayout& layout, int32_t num_blocks, int32_t vocab_size,
            bool shared_blocks);

  // The next token after `history`: a hash of all of it, in [0, vocab_size).
  static int32_t next_token(std::span<const int32_t> history, int32_t vocab_size);

  // One forward step over `output`: one value per entry (-1 where the entry does not sample).
  // Failures are non-fatal gtest failures naming the request and position.
  std::vector<int32_t> step(const SchedulerOutput& output);
  // The request left the scheduler (take_finished): the next plan tells the rank to forget it.
  void finished(const RequestId& id) { plans_.finished(id); }
  // The table this rank rebuilt for a request scheduled at least once and not finished.
  std::span<const int32_t> table(const RequestId& id) const {
    return tables_.table(plans_.handle(id));
  }
  size_t num_tables() const { return tables_.num_requests(); }
  // The tokens the cache holds at positions [0, len) of a request, read through its table as
  // attention would (-1 where a row is outside the cache).
  std::vector<int32_t> read_tokens(const RequestId& id, int64_t len) const;

 private:
  struct Row {
    int32_t token = -1;
    int64_t position = -1;
    int32_t request = -1;
  };
  int32_t tag(const RequestId& id);  // a small integer per request id, for the rows

  kv::DcpLayout layout_;
  int32_t vocab_size_;
  bool shared_blocks_;
  StepPlanBuilder plans_;
  RequestBlockTables tables_;
  std::vector<std::vector<Row>> cache_;  // [N][num_blocks·B]
  std::unordered_map<RequestId, int32_t> tags_;
};

}  // namespace ctxpar::engine::testing
