// FakeModel: a deterministic stand-in for the model runner that really uses the KV cache.
//
// Each step it writes every new token (its id, position and request) into the cache rows
// the DCP layout gives it on its owner rank, then, for each entry that samples, reads the
// request's whole history back from the cache through the entry's block table and returns
// next_token(history). So a block table that points at the wrong rows, a block owned by two
// requests, or a recompute that does not rebuild the cache exactly changes the tokens (and is
// also caught directly by the position/request tags): outputs equal the reference only if the
// scheduler's KV bookkeeping is right.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "ctxpar/engine/scheduler.h"
#include "ctxpar/kv/dcp_layout.h"

namespace ctxpar::engine::testing {

class FakeModel {
 public:
  FakeModel(const kv::DcpLayout& layout, int32_t num_blocks, int32_t vocab_size);

  // The next token after `history`: a hash of all of it, in [0, vocab_size).
  static int32_t next_token(std::span<const int32_t> history, int32_t vocab_size);

  // One forward step over `output`: one value per entry (-1 where the entry does not sample).
  // Failures are non-fatal gtest failures naming the request and position.
  std::vector<int32_t> step(const SchedulerOutput& output);

 private:
  struct Row {
    int32_t token = -1;
    int64_t position = -1;
    int32_t request = -1;
  };
  int32_t tag(const RequestId& id);  // a small integer per request id, for the rows

  kv::DcpLayout layout_;
  int32_t vocab_size_;
  std::vector<std::vector<Row>> cache_;  // [N][num_blocks·B]
  std::unordered_map<RequestId, int32_t> tags_;
};

}  // namespace ctxpar::engine::testing
