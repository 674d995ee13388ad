#include "engine_flags.h"

#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ctxpar/comm/group_agreement.h"
#include "ctxpar/comm/mpi_communicator.h"
#include "ctxpar/comm/mpi_session.h"
#include "ctxpar/core/error.h"
#include "ctxpar/engine/chat_prompt.h"
#include "ctxpar/engine/tokenizer_loader.h"
#include "ctxpar/model/model_config.h"
#include "ctxpar/model/model_location.h"

namespace ctxpar::app {
namespace {

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      size_t used = 0;
      const long v = std::stol(item, &used);
      CTXPAR_CHECK_INPUT(used == item.size() && v >= 0 && v <= INT32_MAX, "bad id");
      ids.push_back(static_cast<int32_t>(v));
    } catch (const std::exception&) {
      CTXPAR_INPUT_FAIL("--prompt-token-ids '{}': '{}' is not a non-negative token id", text, item);
    }
  }
  CTXPAR_CHECK_INPUT(!ids.empty(), "--prompt-token-ids '{}' holds no token id", text);
  return ids;
}

// vLLM flags that change nothing in ctxpar, accepted so that a pasted `vllm serve` line runs
// and named once on stderr, per group: GPU execution (memory, CUDA graphs, custom all-reduce,
// swap and offload space, compilation), remote code (ctxpar runs none), logging and the API
// server's documentation pages. Each takes a value or not.
struct VllmNoOpFlag {
  const char* name;
  bool takes_value;
  const char* group;    // EngineFlags::ignored's key; kIgnoredNotes says why
  bool secret = false;  // its value is not printed
};
constexpr const char* kGpu = "GPU-only";
constexpr const char* kLogging = "logging";
constexpr const char* kUvicorn = "uvicorn";
constexpr const char* kSpeculative = "speculative decoding";
constexpr const char* kMultimodal = "multimodal";
constexpr const char* kHub = "Hugging Face Hub";
constexpr const char* kCohere = "Cohere API";
constexpr VllmNoOpFlag kVllmNoOpFlags[] = {
    {"--gpu-memory-utilization", true, kGpu},
    {"--swap-space", true, kGpu},
    {"--cpu-offload-gb", true, kGpu},
    {"--max-seq-len-to-capture", true, kGpu},
    {"--cuda-graph-sizes", true, kGpu},
    {"--compilation-config", true, kGpu},
    {"--enforce-eager", false, kGpu},
    {"--disable-custom-all-reduce", false, kGpu},
    {"--enable-sleep-mode", false, kGpu},
    {"--trust-remote-code", false, kGpu},
    // Overlaps the host's scheduling with the device's step; ctxpar's ranks are the host.
    {"--async-scheduling", false, kGpu},
    {"--no-async-scheduling", false, kGpu},
    {"--disable-cascade-attn", false, kGpu},
    {"--disable-hybrid-kv-cache-manager", false, kGpu},
    {"--enable-dbo", false, kGpu},
    {"--all2all-backend", true, kGpu},
    {"--max-cudagraph-capture-size", true, kGpu},
    {"--calculate-kv-scales", false, kGpu},
    // How vLLM's processes and loaders are laid out; ctxpar has one process per rank.
    {"--disable-frontend-multiprocessing", false, kGpu},
    {"--api-server-count", true, kGpu},
    {"--max-parallel-loading-workers", true, kGpu},
    {"--safetensors-load-strategy", true, kGpu},
    {"--tokenizer-pool-size", true, kGpu},
    {"--hf-token", true, kHub, true},
    // The scheduler's prefill chunking knobs; ctxpar's chunks follow --max-num-batched-tokens.
    {"--max-num-partial-prefills", true, kGpu},
    {"--long-prefill-token-threshold", true, kGpu},
    // vLLM's own structured-output backends (xgrammar, guidance); ctxpar has its own.
    {"--structured-outputs-config", true, kGpu},
    // A draft model or the checkpoint's MTP layers propose tokens the model then verifies: the
    // outputs follow the model's own distribution either way.
    {"--speculative-config", true, kSpeculative},
    {"--limit-mm-per-prompt", true, kMultimodal},
    {"--mm-processor-kwargs", true, kMultimodal},
    {"--mm-encoder-tp-mode", true, kMultimodal},
    {"--allowed-local-media-path", true, kMultimodal},
    {"--language-model-only", false, kMultimodal},
    {"--disable-log-requests", false, kLogging},
    {"--enable-log-requests", false, kLogging},
    {"--enable-log-outputs", false, kLogging},
    {"--disable-log-stats", false, kLogging},
    {"--max-log-len", true, kLogging},
    {"--uvicorn-log-level", true, kLogging},
    {"--disable-uvicorn-access-log", false, kLogging},
    {"--disable-fastapi-docs", false, kLogging},
    {"--disable-access-log-for-endpoints", true, kLogging},
    {"--otlp-traces-endpoint", true, kLogging},
    {"--collect-detailed-traces", true, kLogging},
    {"--kv-events-config", true, kLogging},
    {"--log-error-stack", false, kLogging},
    {"--enable-log-deltas", false, kLogging},
    {"--no-enable-log-deltas", false, kLogging},
    {"--data-parallel-supervisor-port", true, kGpu},
    {"--dp-supervisor-probe-interval-s", true, kGpu},
    {"--dp-supervisor-probe-timeout-s", true, kGpu},
    {"--dp-supervisor-probe-failure-threshold", true, kGpu},
    {"--enable-flash-late-interaction", false, kGpu},  // pooling models only
    {"--enable-offline-docs", false, kLogging},
    {"--trust-request-mm-kwargs", false, kMultimodal},
    {"--cohere-is-reasoning-model", false, kCohere},
    {"--no-cohere-is-reasoning-model", false, kCohere},
    {"--cohere-format", true, kCohere},
    {"--h11-max-incomplete-event-size", true, kUvicorn},
    {"--h11-max-header-count", true, kUvicorn},
    // Only the URLs FastAPI generates change; uvicorn serves the routes at the same paths.
    {"--root-path", true, kUvicorn},
};

// vLLM flags for what ctxpar does not do, refused with the reason and what to do instead (so a
// pasted line stops with that, not with "not expected"). values: how many values it takes
// (0, 1, or -1 for one or more).
struct VllmRefusedFlag {
  const char* name;
  int values;
  const char* reason;
};
constexpr const char* kNoLora =
    "ctxpar serves a checkpoint's own weights, without LoRA adapters: merge the adapter into "
    "the checkpoint (PEFT's merge_and_unload) and serve that";
constexpr const char* kNoScaleOut =
    "ctxpar serves the whole API from one process; vLLM's render and token-in / token-out "
    "routes are not served";
constexpr VllmRefusedFlag kVllmRefusedFlags[] = {
    {"--enable-lora", 0, kNoLora},
    {"--lora-modules", -1, kNoLora},
    {"--max-loras", 1, kNoLora},
    {"--max-lora-rank", 1, kNoLora},
    {"--lora-dtype", 1, kNoLora},
    {"--max-cpu-loras", 1, kNoLora},
    {"--fully-sharded-loras", 0, kNoLora},
    {"--lora-target-modules", -1, kNoLora},
    {"--kv-transfer-config", 1,
     "ctxpar moves no KV cache between instances (disaggregated prefill): one instance "
     "prefills and decodes"},
    {"--uds", 1, "ctxpar listens on TCP only (--host, --port); put a proxy in front for a socket"},
    {"--middleware", 1, "ctxpar cannot load Python middleware; put it in a proxy in front"},
    {"--tokens-only", 0, kNoScaleOut},
    {"--enable-scale-out", 0, kNoScaleOut},
    {"--grpc-port", 1, "ctxpar serves HTTP only"},
    {"--tool-server", 1,
     "ctxpar runs no built-in or MCP tools for the Responses API; clients run their tools"},
    {"--tool-parser-plugin", 1,
     "ctxpar cannot load Python tool parsers; --tool-call-parser names the ones it has"},
    {"--tool-strict-level", 1,
     "ctxpar does not constrain tool calls under tool_choice auto (the parser reads the free "
     "output); tool_choice required and named tools are constrained"},
    {"--enable-tokenizer-info-endpoint", 0,
     "GET /tokenizer_info is not served (/tokenize and /detokenize are)"},
};

// What a group's line adds after the flags.
std::string ignored_note(const std::string& group) {
  if (group == kGpu) return " (the KV cache size is --kv-cache-memory)";
  if (group == kSpeculative) {
    return " (ctxpar decodes a token a step: speculation changes the speed, not the outputs)";
  }
  if (group == kMultimodal) return " (ctxpar serves text-only models)";
  if (group == kHub) return " (ctxpar reads models from the local Hugging Face cache)";
  if (group == kCohere) return " (ctxpar does not serve vLLM's /cohere routes)";
  if (group == kUvicorn) {
    return " (ctxpar's HTTP server has its own; the request body limit is "
           "--max-request-body-bytes)";
  }
  return "";
}

}  // namespace

// Like vLLM's argparse flags, a repeated scalar flag takes its last value.
void last_value_wins(CLI::App* cmd) {
  for (CLI::Option* o : cmd->get_options()) {
    if (o->get_expected_max() == 1) o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
}

void add_engine_flags(CLI::App* cmd, EngineFlags& f) {
  engine::EngineConfig& c = f.config;
  cmd->add_option("--model", c.model,
                  "builtin:NAME, a Hugging Face model directory or config.json, or a repo id "
                  "(OWNER/NAME) in the Hugging Face cache")
      ->capture_default_str();
  cmd->add_option("--revision", f.revision, "the repo id's branch, tag or commit (default main)");
  cmd->add_option("--download-dir", f.download_dir,
                  "the Hugging Face cache holding the repo id (default: HF_HUB_CACHE, HF_HOME/hub "
                  "or ~/.cache/huggingface/hub)");
  cmd->add_option("--tokenizer", c.tokenizer,
                  "directory of tokenizer.json (and tokenizer_config.json), or a repo id in the "
                  "Hugging Face cache; default: the model's");
  cmd->add_option("--tokenizer-revision", f.tokenizer_revision,
                  "the --tokenizer repo id's branch, tag or commit (default main)");
  cmd->add_option("--tensor-parallel-size", c.tensor_parallel_size, "ranks (T); alias -tp")
      ->capture_default_str();
  cmd->add_option("--decode-context-parallel-size", c.decode_context_parallel_size,
                  "DCP size (N), divides T; alias -dcp")
      ->capture_default_str();
  cmd->add_option("--block-size", c.block_size, "KV block size in tokens per rank (B)")
      ->capture_default_str();
  cmd->add_option("--cp-kv-cache-interleave-size", c.cp_kv_cache_interleave_size,
                  "consecutive tokens per rank (I), divides B")
      ->capture_default_str();
  cmd->add_option("--dcp-comm-backend", c.dcp_comm_backend, "ag_rs or a2a")->capture_default_str();
  cmd->add_option_function<std::string>(
      "--max-model-len",
      [&c](const std::string& v) {
        c.max_model_len =
            v == "auto" || v == "-1" ? 0 : engine::parse_human_readable_int(v, "--max-model-len");
      },
      "tokens per request: 32768, 32k or 32K; auto (or 0): the model's max_position_embeddings "
      "(times a linear or YaRN RoPE factor)");
  cmd->add_option("--max-num-seqs", c.max_num_seqs)->capture_default_str();
  cmd->add_option_function<std::string>(
      "--max-num-batched-tokens",
      [&c](const std::string& v) {
        c.max_num_batched_tokens = engine::parse_human_readable_int(v, "--max-num-batched-tokens");
      },
      "token budget per step (default 2048; without chunked prefill at least --max-model-len)");
  cmd->add_option("--kv-cache-memory,--kv-cache-memory-bytes", f.kv_cache_memory,
                  "KV cache bytes per rank (512MiB, 8GiB, or bytes as vLLM's "
                  "--kv-cache-memory-bytes)")
      ->capture_default_str();
  cmd->add_option("--dtype", c.dtype, "auto, float32 or bfloat16 weights")->capture_default_str();
  cmd->add_option(
         "--kv-cache-dtype", c.kv_cache_dtype,
         "auto, float32, bfloat16, or fp8 (e4m3, scale 1; a sparse model's index keys stay bf16)")
      ->capture_default_str();
  cmd->add_option("--load-format", c.load_format, "auto, safetensors or dummy")
      ->capture_default_str();
  cmd->add_option("--quantization,-q", c.quantization,
                  "fp8: block-scaled FP8 weights (quantized at load unless stored so)");
  cmd->add_option("--seed", c.seed)->capture_default_str();
  cmd->add_option("--additional-config", c.additional_config, "JSON object")->capture_default_str();
  cmd->add_option("--hf-overrides", c.hf_overrides,
                  "JSON object replacing config.json keys, e.g. a YaRN rope_scaling");
  cmd->add_option("--distributed-executor-backend", c.distributed_executor_backend,
                  "mp (in-process ranks, default) or mpi (under mpirun)");
  cmd->add_option("--threads-per-rank", c.threads_per_rank, "0: cores / ranks")
      ->capture_default_str();
  cmd->add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", c.enable_prefix_caching,
                "reuse the KV of cached prompt prefixes, in whole virtual blocks of B*N tokens "
                "(default on)");
  cmd->add_option("--prefix-caching-hash-algo", c.prefix_caching_hash_algo,
                  "the hash naming cached blocks: sha256")
      ->capture_default_str();
  cmd->add_option("--max-logprobs", c.max_logprobs,
                  "the most logprobs / prompt_logprobs a request may ask for (-1: the vocabulary)")
      ->capture_default_str();
  cmd->add_flag("--prefill-only", c.prefill_only,
                "the prefill role: each request stops at the token sampled from its prefill "
                "(max tokens 1, no decode step); reports prefill throughput");
  cmd->add_flag("--enable-chunked-prefill,!--no-enable-chunked-prefill", c.enable_chunked_prefill,
                "prefill prompts longer than a step's token budget over several steps (default "
                "on)");
  cmd->add_option("--pipeline-parallel-size", f.pipeline_parallel_size,
                  "1 only: ctxpar splits a model with -tp and -dcp; alias -pp");
  cmd->add_option("--data-parallel-size", f.data_parallel_size,
                  "1 only: run one server per replica; alias -dp");
  cmd->add_flag("--enable-expert-parallel", f.enable_expert_parallel,
                "accepted: experts are split by tensor parallelism (the same outputs)");
  cmd->add_option("--scheduling-policy", f.scheduling_policy,
                  "fcfs only: requests are scheduled in arrival order")
      ->check(CLI::IsMember({"fcfs"}))
      ->capture_default_str();
  cmd->add_option("--logprobs-mode", f.logprobs_mode,
                  "raw_logprobs only: logprobs are the log-softmax of the raw logits")
      ->check(CLI::IsMember({"raw_logprobs"}))
      ->capture_default_str();
  auto* noop = cmd->add_option_group("vLLM flags with no effect here", "accepted and ignored");
  for (const VllmNoOpFlag& flag : kVllmNoOpFlags) {
    const std::string name = flag.name, group = flag.group;
    if (flag.takes_value) {
      const bool secret = flag.secret;
      noop->add_option_function<std::string>(name, [&f, name, group, secret](const std::string& v) {
        f.ignored[group].push_back(name + " " + (secret ? "(value not shown)" : v));
      });
    } else {
      noop->add_flag_callback(name, [&f, name, group] { f.ignored[group].push_back(name); });
    }
  }
  auto* refused = cmd->add_option_group("vLLM flags ctxpar refuses", "each stops it, saying why");
  for (const VllmRefusedFlag& flag : kVllmRefusedFlags) {
    const std::string entry = std::string(flag.name) + ": " + flag.reason;
    if (flag.values == 0) {
      refused->add_flag_callback(flag.name, [&f, entry] { f.refused.push_back(entry); });
    } else {
      refused
          ->add_option_function<std::vector<std::string>>(
              flag.name,
              [&f, entry](const std::vector<std::string>&) { f.refused.push_back(entry); })
          ->expected(1, flag.values < 0 ? CLI::detail::expected_max_vector_size : 1);
    }
  }
  last_value_wins(cmd);
}

bool ignored_flag_given(const EngineFlags& flags, std::string_view name) {
  for (const auto& group : flags.ignored) {
    for (const std::string& g : group.second) {
      // An entry is the flag, or the flag, a space and its value.
      if (g.starts_with(name) && (g.size() == name.size() || g[name.size()] == ' ')) return true;
    }
  }
  return false;
}

engine::EngineConfig finish_engine_config(const EngineFlags& f) {
  engine::EngineConfig c = f.config;
  c.kv_cache_memory = engine::parse_memory_size(f.kv_cache_memory);
  c.model = model::locate_model(c.model, f.revision, f.download_dir);
  c.tokenizer = model::locate_tokenizer(c.tokenizer, f.tokenizer_revision, f.download_dir);
  CTXPAR_CHECK_INPUT(f.refused.empty(), "{}", f.refused.empty() ? "" : f.refused.front());
  CTXPAR_CHECK_INPUT(f.pipeline_parallel_size == 1,
                     "--pipeline-parallel-size {}: ctxpar has no pipeline parallelism; split the "
                     "model over ranks with --tensor-parallel-size (-tp) and the context with "
                     "--decode-context-parallel-size (-dcp)",
                     f.pipeline_parallel_size);
  CTXPAR_CHECK_INPUT(
      f.data_parallel_size == 1,
      "--data-parallel-size {}: ctxpar runs one engine per server; start one "
      "`ctxpar serve` per replica (on its own cores or hosts) behind a load balancer",
      f.data_parallel_size);
  if (is_output_rank()) {
    for (const auto& [group, flags] : f.ignored) {
      std::string names;
      for (const std::string& flag : flags) names += (names.empty() ? "" : ", ") + flag;
      std::fprintf(stderr, "ctxpar: ignoring vLLM's %s flags: %s%s\n", group.c_str(), names.c_str(),
                   ignored_note(group).c_str());
    }
    if (f.enable_expert_parallel) {
      std::fprintf(stderr,
                   "ctxpar: --enable-expert-parallel: experts are split by tensor parallelism, "
                   "whose outputs are the same\n");
    }
  }
  return c;
}

void add_prompt_flags(CLI::App* cmd, PromptFlags& f) {
  cmd->add_option("--prompt", f.prompts, "a text prompt (repeatable; built-in models)");
  cmd->add_option("--prompt-token-ids", f.prompt_token_ids, "comma-separated ids (repeatable)");
  cmd->add_option("--prompts-file", f.prompts_file,
                  "JSONL: {\"prompt\": \"...\"}, {\"prompt_token_ids\": [...]} or "
                  "{\"messages\": [{\"role\": ..., \"content\": ...}, ...]} per line");
  cmd->add_flag("--apply-chat-template", f.apply_chat_template,
                "render each text prompt as a user message with the model's chat template");
  cmd->add_option("--chat-template", f.chat_template,
                  "a chat template file (or its Jinja text) instead of the model's");
  cmd->add_option("--max-tokens", f.max_tokens, "output tokens per request")->capture_default_str();
  cmd->add_option("--temperature", f.temperature, "0: greedy")->capture_default_str();
  cmd->add_option("--top-k", f.top_k, "0: off")->capture_default_str();
  cmd->add_option("--top-p", f.top_p, "1: off")->capture_default_str();
  cmd->add_option("--sampling-seed", f.seeds, "per-request seed(s)");
  cmd->add_flag("--ignore-eos", f.ignore_eos, "keep generating past EOS");
  cmd->add_option("--stop-token-ids", f.stop_token_ids, "token ids that end a request")
      ->delimiter(',');
  last_value_wins(cmd);
}

const tokenizer::LoadedTokenizer& LazyTokenizer::get() {
  if (!loaded_) loaded_ = engine::load_tokenizer(config_.model, config_.tokenizer);
  return *loaded_;
}

const tokenizer::LoadedTokenizer* LazyTokenizer::get_if_available() {
  try {
    return &get();
  } catch (const Error&) {
    return nullptr;
  }
}

std::vector<engine::GenerationRequest> build_requests(const PromptFlags& f,
                                                      const engine::EngineConfig& config,
                                                      LazyTokenizer& tokenizer) {
  auto encode = [&](const std::string& text) {
    const tokenizer::Tokenizer* t = nullptr;
    try {
      t = tokenizer.get().tokenizer.get();
    } catch (const Error& e) {
      CTXPAR_INPUT_FAIL("text prompts need the model's tokenizer (or give --prompt-token-ids): {}",
                        e.what());
    }
    auto ids = t->encode(text);
    CTXPAR_CHECK_INPUT(!ids.empty(), "prompt '{}' encodes to no tokens", text);
    return ids;
  };
  std::optional<engine::ChatPrompt> chat;
  auto encode_chat = [&](const nlohmann::ordered_json& messages) {
    if (!chat) {
      chat.emplace(tokenizer.get(), model::resolve_model_config(config.model), f.chat_template);
    }
    chat_template::ChatRequest request;
    request.messages = messages;
    request.add_generation_prompt = true;
    const std::string text = chat->render(std::move(request));
    auto ids = tokenizer.get().tokenizer->encode(text, chat->tokenize_with_special_tokens());
    CTXPAR_CHECK_INPUT(!ids.empty(), "the chat prompt encodes to no tokens");
    return ids;
  };
  auto encode_text = [&](const std::string& text) {
    if (!f.apply_chat_template) return encode(text);
    return encode_chat(nlohmann::ordered_json::array({{{"role", "user"}, {"content", text}}}));
  };
  CTXPAR_CHECK_INPUT(f.chat_template.empty() || f.apply_chat_template || !f.prompts_file.empty(),
                     "--chat-template is used with --apply-chat-template or prompts-file "
                     "\"messages\"; add --apply-chat-template");
  std::vector<std::vector<int32_t>> prompts;
  for (const std::string& p : f.prompts) prompts.push_back(encode_text(p));
  for (const std::string& p : f.prompt_token_ids) prompts.push_back(parse_ids(p));
  if (!f.prompts_file.empty()) {
    std::ifstream in(f.prompts_file);
    CTXPAR_CHECK_INPUT(in.good(), "--prompts-file {} cannot be opened", f.prompts_file);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      nlohmann::ordered_json j;  // ordered: a chat template's tojson prints keys as given
      try {
        j = nlohmann::ordered_json::parse(line);
      } catch (const nlohmann::json::exception& e) {
        CTXPAR_INPUT_FAIL("{} line {}: not JSON ({})", f.prompts_file, n, e.what());
      }
      if (j.contains("prompt_token_ids")) {
        CTXPAR_CHECK_INPUT(j["prompt_token_ids"].is_array() && !j["prompt_token_ids"].empty(),
                           "{} line {}: prompt_token_ids must be a non-empty array", f.prompts_file,
                           n);
        std::vector<int32_t> ids;
        for (const auto& v : j["prompt_token_ids"]) {
          // Range-checked as int64 before narrowing: 4294967297 must not become id 1.
          CTXPAR_CHECK_INPUT(v.is_number_integer() && v.get<int64_t>() >= 0 &&
                                 v.get<int64_t>() <= std::numeric_limits<int32_t>::max(),
                             "{} line {}: token id {} is not a token id (an integer in [0, {}])",
                             f.prompts_file, n, v.dump(), std::numeric_limits<int32_t>::max());
          ids.push_back(v.get<int32_t>());
        }
        prompts.push_back(std::move(ids));
      } else if (j.contains("prompt") && j["prompt"].is_string()) {
        prompts.push_back(encode_text(j["prompt"].get<std::string>()));
      } else if (j.contains("messages")) {
        CTXPAR_CHECK_INPUT(j["messages"].is_array() && !j["messages"].empty(),
                           "{} line {}: messages must be a non-empty array of "
                           "{{\"role\", \"content\"}} objects",
                           f.prompts_file, n);
        prompts.push_back(encode_chat(j["messages"]));
      } else {
        CTXPAR_INPUT_FAIL(
            "{} line {}: needs \"prompt\" (string), \"prompt_token_ids\" (array) or "
            "\"messages\" (array)",
            f.prompts_file, n);
      }
    }
  }
  CTXPAR_CHECK_INPUT(!prompts.empty(),
                     "no prompt given: use --prompt, --prompt-token-ids or "
                     "--prompts-file");
  CTXPAR_CHECK_INPUT(f.seeds.size() <= 1 || f.seeds.size() == prompts.size(),
                     "{} --sampling-seed values for {} prompts: give one, or one per prompt",
                     f.seeds.size(), prompts.size());
  // A prompt that can never be served is a usage error here (the engine API would report it
  // per request); check before anything is loaded.
  const engine::ResolvedEngineConfig resolved = engine::resolve_engine_config(config);
  const int64_t max_len = resolved.scheduler.max_model_len;
  const int64_t vocab = resolved.model.vocab_size;
  for (size_t i = 0; i < prompts.size(); ++i) {
    CTXPAR_CHECK_INPUT(static_cast<int64_t>(prompts[i].size()) <= max_len,
                       "prompt {} has {} tokens, more than --max-model-len {}", i,
                       prompts[i].size(), max_len);
    for (int32_t id : prompts[i]) {
      CTXPAR_CHECK_INPUT(id < vocab,
                         "prompt {} has token id {}, outside the model's vocabulary [0, {})", i, id,
                         vocab);
    }
  }
  std::vector<engine::GenerationRequest> requests;
  for (size_t i = 0; i < prompts.size(); ++i) {
    engine::GenerationRequest r;
    r.prompt_token_ids = std::move(prompts[i]);
    r.params.max_tokens = f.max_tokens;
    r.params.temperature = f.temperature;
    r.params.top_k = f.top_k;
    r.params.top_p = f.top_p;
    r.params.ignore_eos = f.ignore_eos;
    r.params.stop_token_ids = f.stop_token_ids;
    // Without a loaded tokenizer the engine uses config.json's and generation_config.json's.
    if (tokenizer.loaded()) r.params.eos_token_ids = tokenizer.get().eos_token_ids;
    if (!f.seeds.empty()) r.params.seed = f.seeds.size() == 1 ? f.seeds[0] : f.seeds[i];
    r.params.validate();
    requests.push_back(std::move(r));
  }
  return requests;
}

bool is_output_rank() {
  return mpi_world_rank() <= 0;
}

void validate_on_every_rank(const std::function<void()>& body) {
  if (!launched_by_mpirun()) {
    body();
    return;
  }
  const auto world = MpiCommunicator::world();
  run_agreed(*world, body);
}

}  // namespace ctxpar::app
