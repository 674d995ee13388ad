// EngineConfig: the flags a user passes (vLLM's names), validated at start-up before any
// weight is loaded. ResolvedEngineConfig is the checked, typed form every rank uses.
#pragma once

#include <cstdint>
#include <string>

#include "ctxpar/engine/scheduler_config.h"
#include "ctxpar/model/layers/model_context.h"
#include "ctxpar/model/model_config.h"

namespace ctxpar::engine {

inline constexpr int64_t kDefaultMaxNumBatchedTokens = 2048;

struct EngineConfig {
  std::string model = "builtin:tiny-llama";  // builtin:NAME, a HF directory or config.json
  std::string tokenizer;  // --tokenizer DIR: where tokenizer.json lives ("": the model's)
  std::string load_format = "auto";  // auto | safetensors | dummy
  // --quantization: "" (as the checkpoint's config says) or "fp8" (128×128 block-scaled e4m3
  // weights; a checkpoint stored so is read as is, others are quantized at load).
  std::string quantization;
  uint64_t seed = 0;
  int tensor_parallel_size = 1;
  int decode_context_parallel_size = 1;
  int block_size = 16;
  int cp_kv_cache_interleave_size = 1;
  std::string dcp_comm_backend = "ag_rs";  // ag_rs | a2a
  int64_t max_model_len = 0;               // 0: the model's max_position_embeddings
  int32_t max_num_seqs = 256;
  // 0: vLLM's default, kDefaultMaxNumBatchedTokens, or without chunked prefill
  // max(max_model_len, kDefaultMaxNumBatchedTokens) so that a whole prompt fits a step.
  int64_t max_num_batched_tokens = 0;
  // --enable-chunked-prefill / --no-enable-chunked-prefill (on by default, as in vLLM v1): a
  // prompt longer than a step's token budget is prefilled over several steps.
  bool enable_chunked_prefill = true;
  int64_t kv_cache_memory = int64_t{512} << 20;  // bytes per rank
  std::string dtype = "auto";                    // auto | float32 | bfloat16
  std::string kv_cache_dtype = "auto";  // auto (= weight dtype) | float32 | bfloat16 | fp8 (e4m3)
  int64_t max_context_chunk = 8192;
  int threads_per_rank = 0;              // 0: the machine's cores shared by the ranks
  std::string additional_config = "{}";  // JSON object (vLLM's --additional-config)
  // vLLM's --hf-overrides: a JSON object whose keys replace config.json's (e.g. rope_scaling
  // for YaRN); "" or "{}": none.
  std::string hf_overrides;
  std::string distributed_executor_backend;  // "" or "mp": in-process ranks; "mpi"
  // The prefill role (`ctxpar generate --prefill-only`): every request stops after the token
  // sampled from its prefill (max_tokens 1), so no decode step runs; its KV is written to the
  // cache by every layer like on a disaggregated prefill node.
  bool prefill_only = false;
  // Benchmark mode (`ctxpar bench --dummy-context`): prompt tokens are not computed; their KV
  // is the random values every cache is filled with when allocated, and only decode entries
  // run the model. Long-context decode can be timed without the prefill (hours at 64K on a
  // few cores); what decode computes over such a context is meaningless, its cost is not.
  bool dummy_context = false;
  // Automatic prefix caching (vLLM's --enable-prefix-caching / --no-enable-prefix-caching, on by
  // default as in vLLM v1; DESIGN.md §6) and the hash that names cached blocks.
  bool enable_prefix_caching = true;
  std::string prefix_caching_hash_algo = "sha256";  // --prefix-caching-hash-algo
  // --max-logprobs (vLLM's, default 20): the most logprobs / prompt_logprobs a request may ask
  // for; -1: the vocabulary size.
  int32_t max_logprobs = 20;
};

// Keys of --additional-config this engine understands; others are rejected by name.
struct AdditionalConfig {
  bool enable_dsa_cp = false;      // DSA-CP for sparse models (model/sfa_mode.h)
  bool enable_flashcomm1 = false;  // sequence-parallel layers (ModelOptions::sequence_parallel)
  std::string sfa_indexer_mode = "replicated";  // replicated | sharded
  std::string o_proj_quant = "none";  // none | bf16 | int8 (MLA-family o_proj; int8: W8A8)
};

// Whether the environment asks for sequence-parallel layers: VLLM_ASCEND_ENABLE_FLASHCOMM1 or
// CTXPAR_ENABLE_FLASHCOMM1 set to 1 or true (0, false or unset: no). Any other value is an
// Error naming the variable.
bool flashcomm1_from_environment();

struct ResolvedEngineConfig {
  EngineConfig raw;
  model::ModelConfig model;  // eos_token_ids: config.json's, then generation_config.json's
  model::ModelOptions options;
  SchedulerConfig scheduler;
  AdditionalConfig additional;
  bool use_dummy_weights = false;
  bool use_mpi = false;
  int threads_per_rank = 1;

  // max_logprobs with -1 resolved to the vocabulary size.
  int64_t max_logprobs() const;
};

// Checks every flag and the model config against (T, N); throws ctxpar::Error naming the bad
// value and what is valid. Reads config.json (or the built-in config), never weights.
ResolvedEngineConfig resolve_engine_config(const EngineConfig& config);

// "512MiB", "8GiB", "1.5G", "1000000" → bytes. Throws for anything else.
int64_t parse_memory_size(const std::string& text);

// vLLM's human-readable integers (--max-model-len 128k): "32768", "25.6k" (k m g t: powers of
// 1000), "128K" (K M G T: powers of 1024, whole numbers only). Throws InputError naming `flag`
// and the value otherwise.
int64_t parse_human_readable_int(const std::string& text, const std::string& flag);

// --kv-cache-dtype: "auto" (the weights' dtype), "float32", "bfloat16", or "fp8" / "fp8_e4m3"
// (e4m3 with the checkpoint's per-tensor k/v scales, else 1; model/kv_cache_scales.h).
// Throws InputError naming the value and the valid ones.
DType parse_kv_cache_dtype(const std::string& name, DType weights);

AdditionalConfig parse_additional_config(const std::string& json_text);

}  // namespace ctxpar::engine
