// The engine: runs a batch of generation requests on T ranks (in-process threads, or MPI
// processes under mpirun) and returns their outputs (DESIGN.md §6).
//
// SPMD: every rank loads its weight shard and allocates its KV cache; rank 0 also owns the
// scheduler and sampler. Each step rank 0 broadcasts the StepPlan, all ranks run the forward
// pass, the logits reach every rank (vocab-parallel LM head + all-gather) and rank 0 samples.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ctxpar/engine/engine_config.h"
#include "ctxpar/engine/sampling_params.h"

namespace ctxpar::engine {

struct GenerationRequest {
  std::string id;  // empty: the index
  std::vector<int32_t> prompt_token_ids;
  SamplingParams params;
};

struct GenerationOutput {
  std::string id;
  std::vector<int32_t> prompt_token_ids;
  std::vector<int32_t> output_token_ids;
  std::string finish_reason;  // "stop", "length", "abort", "rejected: <why>"
  // With RunOptions::record_logits: the logits each output token was sampled from.
  std::vector<std::vector<float>> logits;
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
  int64_t steps = 0;
  int64_t preemptions = 0;
  double load_seconds = 0;
};

struct GenerationResult {
  std::vector<GenerationOutput> outputs;  // in request order
  EngineStats stats;
};

struct StepProgress {
  int64_t finished_requests;
  int64_t total_requests;
  int64_t generated_tokens;
};

struct RunOptions {
  bool record_logits = false;
  std::function<void(const StepProgress&)> on_step;  // rank 0, after each step
};

// Validates the config first (no weights read before that), then runs. Throws ctxpar::Error for
// an invalid config or a KV budget that cannot hold one max_model_len request. Under MPI every
// process calls this; only rank 0's result is filled.
GenerationResult generate(const EngineConfig& config,
                          const std::vector<GenerationRequest>& requests,
                          const RunOptions& options = {});

}  // namespace ctxpar::engine
