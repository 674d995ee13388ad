// EngineStats: what a run of the engine measured, on rank 0. The KV fields are fixed at load;
// the counters grow with every step.
#pragma once

#include <cstdint>

namespace ctxpar::engine {

// Prefix-cache lookups in tokens, as vLLM's PrefixCacheStats counts them: each admitted request
// queries its num_tokens and hits the tokens found cached. A request resumed after preemption
// counts apart (vLLM's preempted_*), so recompute does not inflate the hit rate of new
// requests. vLLM's vllm:prefix_cache_queries / _hits are `queries` and `hits`. All 0 when
// prefix caching is off.
struct PrefixCacheStats {
  int64_t requests = 0;
  int64_t queries = 0;  // tokens of the requests looked up
  int64_t hits = 0;     // of those, tokens whose KV came from the cache
  int64_t preempted_requests = 0;
  int64_t preempted_queries = 0;
  int64_t preempted_hits = 0;
};

struct EngineStats {
  int64_t kv_bytes_per_rank = 0;  // allocated KV cache on one rank, all layers
  int32_t blocks_per_rank = 0;
  int64_t token_capacity = 0;              // tokens the DCP group holds: blocks·B·N
  int64_t token_capacity_without_dcp = 0;  // the same memory with N = 1
  // This rank's KV bytes per sequence token, all layers: a sharded cache row counts 1/N.
  int64_t kv_bytes_per_token_per_rank = 0;
  int64_t prefill_tokens = 0;
  double prefill_seconds = 0;  // steps that carried prompt tokens
  int64_t decode_tokens = 0;   // tokens sampled by decode-only steps (not the prefill's token)
  double decode_seconds = 0;   // decode-only steps
  int64_t decode_steps = 0;    // decode-only steps: decode_tokens / decode_steps is their batch
  // Of prefill_seconds / decode_seconds: rank 0's wall time inside TP and DCP collectives
  // (ParallelGroups::collective_seconds), waiting for slower ranks included.
  double prefill_collective_seconds = 0;
  double decode_collective_seconds = 0;
  int64_t steps = 0;
  int64_t preemptions = 0;
  PrefixCacheStats prefix_cache;
  double load_seconds = 0;
};

// The counters `now` gained since `before` (the KV fields and load time are now's).
inline EngineStats counters_since(const EngineStats& now, const EngineStats& before) {
  EngineStats d = now;
  d.prefill_tokens -= before.prefill_tokens;
  d.prefill_seconds -= before.prefill_seconds;
  d.decode_tokens -= before.decode_tokens;
  d.decode_seconds -= before.decode_seconds;
  d.decode_steps -= before.decode_steps;
  d.prefill_collective_seconds -= before.prefill_collective_seconds;
  d.decode_collective_seconds -= before.decode_collective_seconds;
  d.steps -= before.steps;
  d.preemptions -= before.preemptions;
  PrefixCacheStats& p = d.prefix_cache;
  const PrefixCacheStats& b = before.prefix_cache;
  p.requests -= b.requests;
  p.queries -= b.queries;
  p.hits -= b.hits;
  p.preempted_requests -= b.preempted_requests;
  p.preempted_queries -= b.preempted_queries;
  p.preempted_hits -= b.preempted_hits;
  return d;
}

}  // namespace ctxpar::engine
