// generate(): runs a batch of generation requests to completion on T ranks (in-process
// threads, or MPI processes under mpirun) and returns their outputs (DESIGN.md §6). A thin
// user of the online engine (online_engine.h): the batch enters it at once, so it is scheduled
// exactly as a batch.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ctxpar/engine/engine_config.h"
#include "ctxpar/engine/engine_stats.h"
#include "ctxpar/engine/logprobs.h"
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
  std::string finish_reason;  // "stop", "length", "abort", "error: <why>", "rejected: <why>"
  // With RunOptions::record_logits: the logits each output token was sampled from.
  std::vector<std::vector<float>> logits;
  // With params.prompt_logprobs: prompt tokens 1.. scored (RequestOutput::prompt_logprobs).
  std::vector<SampledLogprobs> prompt_logprobs;
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
  // Batches run to completion one after another before the requests, on the same loaded
  // engine (oneDNN primitives built, scratch touched: what vLLM's bench latency warms up);
  // their outputs are dropped and their steps left out of the result's stats. Give them
  // other prompts than the requests', or the prefix cache serves the requests' prompts.
  std::vector<std::vector<GenerationRequest>> warmup;
};

// Validates the config first (no weights read before that), then runs. A request the engine
// can never serve (an empty prompt, a token outside the vocabulary, a prompt over
// max_model_len, invalid params) finishes as "rejected: <why>" without running. Throws
// ctxpar::Error for an invalid config, a KV budget that cannot hold one max_model_len
// request, or a request id used twice. Under MPI every process calls this; only rank 0's
// result is filled.
GenerationResult generate(const EngineConfig& config,
                          const std::vector<GenerationRequest>& requests,
                          const RunOptions& options = {});

}  // namespace ctxpar::engine
