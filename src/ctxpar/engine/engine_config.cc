#include "ctxpar/engine/engine_config.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "ctxpar/comm/mpi_session.h"
#include "ctxpar/core/error.h"
#include "ctxpar/core/thread_pool.h"
#include "ctxpar/engine/tokenizer_loader.h"
#include "ctxpar/model/sfa_mode.h"

namespace ctxpar::engine {
namespace {

DType weight_dtype_of(const std::string& dtype, const model::ModelConfig& m) {
  if (dtype == "auto") return m.dtype == DType::kBF16 ? DType::kBF16 : DType::kF32;
  if (dtype == "float32" || dtype == "float") return DType::kF32;
  if (dtype == "bfloat16") return DType::kBF16;
  CTXPAR_INPUT_FAIL("--dtype '{}' is not supported; use auto, float32 or bfloat16", dtype);
}

model::OProjQuant o_proj_quant_of(const std::string& name) {
  if (name == "none") return model::OProjQuant::kNone;
  if (name == "bf16") return model::OProjQuant::kBf16;
  if (name == "int8") return model::OProjQuant::kInt8;
  CTXPAR_INPUT_FAIL(
      "additional config o_proj_quant '{}' is not valid; use \"none\", \"bf16\" or \"int8\"", name);
}

}  // namespace

bool flashcomm1_from_environment() {
  bool on = false;
  for (const char* name : {"VLLM_ASCEND_ENABLE_FLASHCOMM1", "CTXPAR_ENABLE_FLASHCOMM1"}) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    const std::string v(value);
    CTXPAR_CHECK_INPUT(v == "0" || v == "1" || v == "true" || v == "false" || v.empty(),
                       "environment variable {}={} is not valid; use 1 (or true) to enable "
                       "sequence-parallel layers, 0 (or false) to leave them off",
                       name, v);
    on = on || v == "1" || v == "true";
  }
  return on;
}

DType parse_kv_cache_dtype(const std::string& name, DType weights) {
  if (name == "auto") return weights;
  if (name == "float32" || name == "float") return DType::kF32;
  if (name == "bfloat16") return DType::kBF16;
  if (name == "fp8" || name == "fp8_e4m3") return DType::kF8E4M3;
  CTXPAR_INPUT_FAIL(
      "--kv-cache-dtype '{}' is not supported; use auto, float32, bfloat16, fp8 or fp8_e4m3", name);
}

int64_t parse_memory_size(const std::string& text) {
  size_t end = 0;
  double value = 0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
    CTXPAR_INPUT_FAIL("memory size '{}' is not a number; use bytes or a unit: 512MiB, 8GiB, 1.5G",
                      text);
  }
  std::string unit = text.substr(end);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double scale = 1;
  if (unit.empty() || unit == "b") {
    scale = 1;
  } else if (unit == "k" || unit == "kb" || unit == "kib") {
    scale = unit == "kb" ? 1e3 : 1024.0;
  } else if (unit == "m" || unit == "mb" || unit == "mib") {
    scale = unit == "mb" ? 1e6 : 1024.0 * 1024;
  } else if (unit == "g" || unit == "gb" || unit == "gib") {
    scale = unit == "gb" ? 1e9 : 1024.0 * 1024 * 1024;
  } else {
    CTXPAR_INPUT_FAIL(
        "memory size '{}' has unknown unit '{}'; use B, KiB, MiB, GiB (or KB, MB, GB)", text, unit);
  }
  const double bytes = value * scale;
  CTXPAR_CHECK_INPUT(std::isfinite(bytes) && bytes > 0 && bytes < 9.0e18,
                     "memory size '{}' must be positive", text);
  return static_cast<int64_t>(bytes);
}

int64_t parse_human_readable_int(const std::string& text, const std::string& flag) {
  // vLLM's human_readable_int: digits, optionally a fraction, then one suffix: lower case
  // decimal (k m g t: 25.6k = 25600), upper case binary (K M G T: 16K = 16384, whole numbers).
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  const size_t whole = i;
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  }
  const std::string number = text.substr(0, i), suffix = text.substr(i);
  static const std::string kDecimal = "kmgt", kBinary = "KMGT";
  const bool decimal = suffix.size() == 1 && kDecimal.find(suffix[0]) != std::string::npos;
  const bool binary = suffix.size() == 1 && kBinary.find(suffix[0]) != std::string::npos;
  const bool fraction = i > whole;
  CTXPAR_CHECK_INPUT(whole > 0 && i != whole + 1 && (suffix.empty() || decimal || binary) &&
                         (!fraction || suffix.size() == 1),
                     "{} '{}' is not an integer; give digits, optionally with a suffix: k, m, g "
                     "(1000s: 25.6k = 25600) or K, M, G (1024s: 16K = 16384)",
                     flag, text);
  CTXPAR_CHECK_INPUT(!fraction || decimal,
                     "{} '{}': decimals are not allowed with binary suffixes like {}; did you "
                     "mean {}{}?",
                     flag, text, suffix, number,
                     static_cast<char>(std::tolower(static_cast<unsigned char>(suffix.back()))));
  int power = 0;
  double base = 1;
  if (!suffix.empty()) {
    power = 1 + static_cast<int>((decimal ? kDecimal : kBinary).find(suffix[0]));
    base = decimal ? 1000.0 : 1024.0;
  }
  const double value = std::stod(number) * std::pow(base, power);
  CTXPAR_CHECK_INPUT(value < 9.0e18, "{} '{}' is too large", flag, text);
  return static_cast<int64_t>(value);
}

AdditionalConfig parse_additional_config(const std::string& json_text) {
  AdditionalConfig out;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text.empty() ? "{}" : json_text);
  } catch (const nlohmann::json::exception& e) {
    CTXPAR_INPUT_FAIL("--additional-config is not valid JSON ({}): {}", e.what(), json_text);
  }
  CTXPAR_CHECK_INPUT(j.is_object(), "--additional-config must be a JSON object, got: {}",
                     json_text);
  for (const auto& [key, value] : j.items()) {
    if (key == "enable_dsa_cp") {
      CTXPAR_CHECK_INPUT(value.is_boolean(),
                         "additional config enable_dsa_cp must be true or false");
      out.enable_dsa_cp = value.get<bool>();
    } else if (key == "enable_flashcomm1") {
      CTXPAR_CHECK_INPUT(value.is_boolean(),
                         "additional config enable_flashcomm1 must be true or false");
      out.enable_flashcomm1 = value.get<bool>();
    } else if (key == "sfa_indexer_mode") {
      CTXPAR_CHECK_INPUT(
          value.is_string() && (value == "replicated" || value == "sharded"),
          "additional config sfa_indexer_mode {} is not valid; use \"replicated\" or "
          "\"sharded\"",
          value.dump());
      out.sfa_indexer_mode = value.get<std::string>();
    } else if (key == "o_proj_quant") {
      CTXPAR_CHECK_INPUT(
          value.is_string() && (value == "none" || value == "bf16" || value == "int8"),
          "additional config o_proj_quant {} is not valid; use \"none\", \"bf16\" or "
          "\"int8\"",
          value.dump());
      out.o_proj_quant = value.get<std::string>();
    } else {
      CTXPAR_INPUT_FAIL(
          "additional config key '{}' is not known; known keys: enable_dsa_cp, "
          "enable_flashcomm1, sfa_indexer_mode, o_proj_quant",
          key);
    }
  }
  return out;
}

ResolvedEngineConfig resolve_engine_config(const EngineConfig& c) {
  ResolvedEngineConfig r;
  r.raw = c;
  const int t = c.tensor_parallel_size, n = c.decode_context_parallel_size;
  CTXPAR_CHECK_INPUT(t >= 1, "--tensor-parallel-size {} must be >= 1", t);
  CTXPAR_CHECK_INPUT(
      n >= 1 && t % n == 0,
      "--decode-context-parallel-size {} must be >= 1 and divide --tensor-parallel-size {}", n, t);
  const kv::DcpLayout layout(n, c.block_size, c.cp_kv_cache_interleave_size);  // B, I rules
  const attention::DcpCommPlan plan = attention::parse_dcp_comm_plan(c.dcp_comm_backend);
  CTXPAR_CHECK_INPUT(
      c.load_format == "auto" || c.load_format == "safetensors" || c.load_format == "dummy",
      "--load-format '{}' is not supported; use auto, safetensors or dummy", c.load_format);
  CTXPAR_CHECK_INPUT(
      c.distributed_executor_backend.empty() || c.distributed_executor_backend == "mp" ||
          c.distributed_executor_backend == "mpi",
      "--distributed-executor-backend '{}' is not supported; use mp (in-process ranks) "
      "or mpi (under mpirun)",
      c.distributed_executor_backend);
  CTXPAR_CHECK_INPUT(c.kv_cache_memory > 0, "--kv-cache-memory must be positive, got {}",
                     c.kv_cache_memory);
  CTXPAR_CHECK_INPUT(c.max_context_chunk >= 1, "max context chunk {} must be >= 1",
                     c.max_context_chunk);
  CTXPAR_CHECK_INPUT(c.max_logprobs >= -1,
                     "--max-logprobs {} must be -1 (the vocabulary size) or >= 0", c.max_logprobs);
  r.additional = parse_additional_config(c.additional_config);
  if (flashcomm1_from_environment()) r.additional.enable_flashcomm1 = true;

  r.model = model::resolve_model_config(c.model, c.hf_overrides);
  // generation_config.json's EOS ids end generation too (vLLM adds them to the stop ids;
  // Llama-3.1 lists three).
  for (const int32_t id :
       tokenizer::read_generation_config(model_directory(c.model)).eos_token_ids) {
    if (std::find(r.model.eos_token_ids.begin(), r.model.eos_token_ids.end(), id) ==
        r.model.eos_token_ids.end()) {
      r.model.eos_token_ids.push_back(id);
    }
  }
  r.use_dummy_weights =
      c.load_format == "dummy" || (c.load_format == "auto" && model::is_builtin_model(c.model));
  CTXPAR_CHECK_INPUT(r.use_dummy_weights || !model::is_builtin_model(c.model),
                     "{} has no weights to load; use --load-format dummy (or auto)", c.model);
  r.use_mpi = c.distributed_executor_backend == "mpi";

  // FP8 (vLLM's --quantization fp8, or an FP8 checkpoint's quantization_config): weights stored
  // FP8 stay so; dummy weights, and a checkpoint that is not FP8, are quantized at load.
  // As vLLM: --quantization names the checkpoint's own method, or fp8 (quantized at load) for
  // one that is not quantized.
  const std::string& stored_method = r.model.quantization.method;
  CTXPAR_CHECK_INPUT(c.quantization.empty() || c.quantization == "fp8" ||
                         c.quantization == "compressed-tensors" || c.quantization == "fbgemm_fp8",
                     "--quantization '{}' is not supported; use fp8, compressed-tensors or "
                     "fbgemm_fp8 (or leave it out)",
                     c.quantization);
  CTXPAR_CHECK_INPUT(
      c.quantization.empty() || c.quantization == stored_method ||
          (stored_method.empty() && c.quantization == "fp8"),
      "Quantization method specified in the model config ({}) does not match the quantization "
      "method specified in the `quantization` argument ({})",
      stored_method.empty() ? "None" : stored_method, c.quantization);
  const bool stored_fp8 = r.model.quantization.is_fp8() && !r.use_dummy_weights;
  if (c.quantization == "fp8" && !r.model.quantization.is_fp8()) {
    r.model.quantization.method = "fp8";
    // The scales are ours to pick: powers of two (DeepSeek-V3.1's ue8m0) make e4m3 · scale
    // exact in bf16, so a bf16 prefill runs one matmul over the whole of K (kernels/linear_fp8).
    r.model.quantization.ue8m0_scales = true;
  }
  r.options.quantize_fp8 = r.model.quantization.is_fp8() && !stored_fp8;
  r.options.weight_dtype = weight_dtype_of(c.dtype, r.model);
  r.options.kv_cache_dtype = parse_kv_cache_dtype(c.kv_cache_dtype, r.options.weight_dtype);
  r.options.block_size = c.block_size;
  r.options.interleave = c.cp_kv_cache_interleave_size;
  r.options.comm_plan = plan;
  r.options.max_context_chunk = c.max_context_chunk;
  r.options.sfa_indexer_mode = attention::parse_sfa_indexer_mode(r.additional.sfa_indexer_mode);
  r.options.enable_dsa_cp = r.additional.enable_dsa_cp;
  r.options.sequence_parallel = r.additional.enable_flashcomm1;
  r.options.o_proj_quant = o_proj_quant_of(r.additional.o_proj_quant);
  // (T, N), the SFA mode and the options against the model, before any weight is read.
  model::validate_model_options(r.model, t, n, r.options);

  const int64_t model_max = model::derived_max_model_len(r.model);
  const int64_t max_len = c.max_model_len > 0 ? c.max_model_len : model_max;
  CTXPAR_CHECK_INPUT(max_len >= 1, "--max-model-len {} must be >= 1", max_len);
  CTXPAR_CHECK_INPUT(model_max <= 0 || max_len <= model_max,
                     "--max-model-len {} exceeds the {} tokens the model supports "
                     "(max_position_embeddings {}, RoPE {} factor {}); a longer context needs "
                     "RoPE scaling, e.g. --hf-overrides '{{\"rope_scaling\": {{\"rope_type\": "
                     "\"yarn\", \"factor\": 4.0, \"original_max_position_embeddings\": {}}}}}'",
                     max_len, model_max, r.model.max_position_embeddings,
                     model::rope_type_name(r.model.rope.type), r.model.rope.factor,
                     r.model.max_position_embeddings);
  CTXPAR_CHECK_INPUT(c.max_num_batched_tokens >= 0,
                     "--max-num-batched-tokens {} must be positive (or 0 for the default)",
                     c.max_num_batched_tokens);
  const int64_t budget = c.max_num_batched_tokens > 0 ? c.max_num_batched_tokens
                         : c.enable_chunked_prefill
                             ? kDefaultMaxNumBatchedTokens
                             : std::max(max_len, kDefaultMaxNumBatchedTokens);
  CTXPAR_CHECK_INPUT(c.enable_chunked_prefill || budget >= max_len,
                     "max_num_batched_tokens ({}) is smaller than max_model_len ({}) with "
                     "--no-enable-chunked-prefill: no prompt longer than the budget could run; "
                     "increase --max-num-batched-tokens or decrease --max-model-len",
                     budget, max_len);
  CTXPAR_CHECK_INPUT(budget >= c.max_num_seqs,
                     "max_num_batched_tokens ({}) must be greater than or equal to max_num_seqs "
                     "({}): a decode step of every running request must fit",
                     budget, c.max_num_seqs);
  r.scheduler.max_num_seqs = c.max_num_seqs;
  r.scheduler.max_num_batched_tokens = budget;
  r.scheduler.max_model_len = max_len;
  r.scheduler.enable_chunked_prefill = c.enable_chunked_prefill;
  r.scheduler.layout = layout;
  // Checked even with caching off, as vLLM checks the choice.
  r.scheduler.block_hash = kv::block_hash_function(c.prefix_caching_hash_algo);
  r.scheduler.enable_prefix_caching = c.enable_prefix_caching;
  r.scheduler.validate();

  CTXPAR_CHECK_INPUT(c.threads_per_rank >= 0, "threads per rank {} must be >= 0",
                     c.threads_per_rank);
  r.threads_per_rank = c.threads_per_rank > 0
                           ? c.threads_per_rank
                           : default_threads_per_rank(r.use_mpi ? mpi_ranks_on_this_host() : t);
  return r;
}

int64_t ResolvedEngineConfig::max_logprobs() const {
  return raw.max_logprobs == -1 ? model.vocab_size
                                : std::min<int64_t>(raw.max_logprobs, model.vocab_size);
}

}  // namespace ctxpar::engine
