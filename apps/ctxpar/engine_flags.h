// The engine flags shared by generate, verify and bench, with vLLM's names, and the prompt
// inputs (--prompt, --prompt-token-ids, --prompts-file) and sampling flags.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "ctxpar/engine/llm_engine.h"
#include "ctxpar/tokenizer/tokenizer_files.h"

namespace ctxpar::app {

struct EngineFlags {
  engine::EngineConfig config;
  std::string kv_cache_memory = "512MiB";
  // A Hugging Face repo id as the model is looked up in the hub cache (model/model_location.h)
  // at this revision, in --download-dir when given.
  std::string revision;
  std::string download_dir;
  std::string tokenizer_revision;  // the same for a --tokenizer repo id
  // vLLM's -pp and -dp: only 1 runs here (finish_engine_config says what to use instead).
  int pipeline_parallel_size = 1;
  int data_parallel_size = 1;
  // vLLM's --enable-expert-parallel: experts stay split by tensor parallelism (same outputs).
  bool enable_expert_parallel = false;
  // vLLM's choices of which ctxpar has one: the scheduling order and what logprobs hold.
  std::string scheduling_policy = "fcfs";
  std::string logprobs_mode = "raw_logprobs";
  // vLLM flags given that change nothing here ("--gpu-memory-utilization 0.9"), by group
  // ("GPU-only", "logging"): accepted so that a pasted `vllm serve` line runs, and named once
  // on stderr as ignored.
  std::map<std::string, std::vector<std::string>> ignored;
  // vLLM flags given that ctxpar cannot honour, each "--flag: why"; finish_engine_config
  // refuses the first.
  std::vector<std::string> refused;
};

void add_engine_flags(CLI::App* cmd, EngineFlags& flags);
// Whether the ignored vLLM flag `name` ("--disable-log-stats") was given.
bool ignored_flag_given(const EngineFlags& flags, std::string_view name);
// Applies the string-typed flags (memory sizes) to flags.config, turns a Hugging Face repo id
// into its cached snapshot directory (config.model; flags.config.model keeps the name as given)
// and, on the output rank, names the ignored vLLM flags on stderr; throws ctxpar::InputError.
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
  // --apply-chat-template: each text prompt is one user message rendered with the model's
  // chat template (engine::ChatPrompt); --chat-template overrides the template.
  bool apply_chat_template = false;
  std::string chat_template;
};

void add_prompt_flags(CLI::App* cmd, PromptFlags& flags);

// The model's tokenizer, loaded on first use (text prompts need it; token-id prompts do not).
class LazyTokenizer {
 public:
  explicit LazyTokenizer(const engine::EngineConfig& config) : config_(config) {}
  const tokenizer::LoadedTokenizer& get();  // throws ctxpar::Error when it cannot be loaded
  // nullptr when the model has no usable tokenizer (token-id prompts still run).
  const tokenizer::LoadedTokenizer* get_if_available();
  bool loaded() const { return loaded_.has_value(); }

 private:
  const engine::EngineConfig& config_;
  std::optional<tokenizer::LoadedTokenizer> loaded_;
};

// The requests named by the flags; text prompts are encoded with the model's tokenizer
// (add_special_tokens, as vLLM's LLM.generate), whose EOS ids (tokenizer_config,
// generation_config, config.json) then end generation. Conversations (prompts-file
// "messages", or text prompts with --apply-chat-template) are rendered with the model's chat
// template and encoded as vLLM's chat endpoint does. Throws ctxpar::Error when there is no
// prompt, a prompt cannot be read, or a text prompt meets a model without a tokenizer.
std::vector<engine::GenerationRequest> build_requests(const PromptFlags& flags,
                                                      const engine::EngineConfig& config,
                                                      LazyTokenizer& tokenizer);

// True when this process is rank 0 (or not under mpirun): only rank 0 prints.
bool is_output_rank();

// Runs the validation in `body` (flags, files, prompts; no collectives). Under mpirun every
// rank runs it and the ranks agree on the outcome, so a bad value that only one rank sees
// stops them all with that rank's message (a ctxpar::GroupFailure on every rank).
void validate_on_every_rank(const std::function<void()>& body);

}  // namespace ctxpar::app
