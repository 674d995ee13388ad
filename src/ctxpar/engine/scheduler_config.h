// SchedulerConfig: the limits one scheduling step works within (vLLM's SchedulerConfig plus the
// KV layout the scheduler allocates in).
#pragma once

#include <cstdint>

#include "ctxpar/kv/block_hash.h"
#include "ctxpar/kv/dcp_layout.h"

namespace ctxpar::engine {

struct SchedulerConfig {
  int32_t max_num_seqs = 256;             // requests in one step, and running at once
  int64_t max_num_batched_tokens = 2048;  // new tokens in one step (the token budget)
  int64_t max_model_len = 4096;           // prompt + output tokens of one request
  // A prompt longer than the budget left in a step is split into chunks over several steps.
  // Off: a prompt is prefilled in one step (but for prompt_logprobs, below), so the budget must
  // hold max_model_len tokens.
  bool enable_chunked_prefill = true;
  // The most prompt tokens a request with prompt_logprobs computes in one step, chunked prefill
  // or not: each returns a row of logits [vocab] f32 on every rank (at 128K tokens of
  // vocabulary, 512 rows are 256 MiB; a 32K-token prompt in one step would be 16 GiB).
  int64_t max_all_logits_tokens = 512;
  // Block size B, DCP size N and interleave I: a block id covers B·N positions (DESIGN.md §2).
  kv::DcpLayout layout{1, 16, 1};
  // Automatic prefix caching, on by default as in vLLM v1 (DESIGN.md §6): full virtual blocks
  // stay in the pool under chained hashes after their requests free them, and a new request
  // starts after the longest cached prefix of its tokens.
  bool enable_prefix_caching = true;
  kv::BlockHashFunction block_hash = &kv::sha256_block_hash;

  // Throws ctxpar::Error naming the field and the rule: every count >= 1,
  // max_num_batched_tokens >= max_num_seqs (a decode step for every running request fits),
  // without chunked prefill max_num_batched_tokens >= max_model_len, and a block_hash when
  // prefix caching is on.
  void validate() const;
};

}  // namespace ctxpar::engine
