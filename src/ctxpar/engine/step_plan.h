// StepPlan: what rank 0 decided for one step, broadcast to every rank so all run the same
// forward pass (DESIGN.md §6). It is the scheduler's output reduced to what a model runner
// needs, with a compact byte encoding for Communicator::broadcast_bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "ctxpar/attention/attention_metadata.h"

namespace ctxpar::engine {

struct StepPlan {
  enum class Command : uint8_t { kRun = 0, kStop = 1 };

  struct Entry {
    int64_t num_computed = 0;          // tokens already in the KV cache
    std::vector<int32_t> token_ids;    // the new tokens, at positions num_computed...
    std::vector<int32_t> block_table;  // virtual blocks covering num_computed + new tokens
    bool samples = false;              // this entry's last token's logits are wanted
  };

  Command command = Command::kRun;
  std::vector<Entry> entries;  // decodes first, as scheduled

  std::vector<uint8_t> encode() const;
  // Throws ctxpar::Error on a malformed buffer (truncated, counts out of range).
  static StepPlan decode(const std::vector<uint8_t>& bytes);

  // The attention layer's per-step input, entry for entry.
  std::vector<attention::ScheduledRequest> attention_batch() const;
  int64_t num_tokens() const;
  int64_t num_sampling_entries() const;
};

}  // namespace ctxpar::engine
