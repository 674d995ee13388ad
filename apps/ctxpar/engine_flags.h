// The engine flags shared by generate, verify and bench, with vLLM's names, and the prompt
// inputs (--prompt, --prompt-token-ids, --prompts-file) and sampling flags.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "ctxpar/engine/llm_engine.h"

namespace ctxpar::app {

struct EngineFlags {
  engine::EngineConfig config;
  std::string kv_cache_memory = "512MiB";
};

void add_engine_flags(CLI::App* cmd, EngineFlags& flags);
// Applies the string-typed flags (memory sizes) to flags.config; throws ctxpar::Error.
engine::EngineConfig finish_engine_config(const EngineFlags& flags);

struct PromptFlags {
  std::vector<std::string> prompts;
  std::vector<std::string> prompt_token_ids;  // "1,2,3" each
  std::string prompts_file;                   // JSONL
  int64_t max_tokens = 16;
  float temperature = 0.0f;
  int32_t top_k = 0;
  float top_p = 1.0f;
  std::vector<uint64_t> seeds;  // one per request or one for all; empty: none
  bool ignore_eos = false;
  std::vector<int32_t> stop_token_ids;
};

void add_prompt_flags(CLI::App* cmd, PromptFlags& flags);

// The requests named by the flags, tokenized with the built-in byte tokenizer for text
// prompts (built-in models only; other models take --prompt-token-ids). Throws ctxpar::Error
// when there is no prompt or a prompt cannot be read.
std::vector<engine::GenerationRequest> build_requests(const PromptFlags& flags,
                                                      const engine::EngineConfig& config);

// True when this process is rank 0 (or not under mpirun): only rank 0 prints.
bool is_output_rank();

// Runs the validation in `body` (flags, files, prompts; no collectives). Under mpirun every
// rank runs it and the ranks agree on the outcome, so a bad value that only one rank sees
// stops them all with that rank's message (a ctxpar::GroupFailure on every rank).
void validate_on_every_rank(const std::function<void()>& body);

}  // namespace ctxpar::app
