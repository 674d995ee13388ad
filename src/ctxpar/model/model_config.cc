#include "ctxpar/model/model_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include "ctxpar/core/error.h"
#include "ctxpar/model/builtin_configs.h"

namespace ctxpar::model {
namespace {

using nlohmann::json;

constexpr std::string_view kSupportedArchs =
    "LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, "
    "DeepseekV2ForCausalLM, DeepseekV3ForCausalLM, DeepseekV32ForCausalLM, "
    "GlmMoeDsaForCausalLM";

// Typed access to the fields of one JSON object, with messages naming the file and the key.
// A key whose value is null counts as absent: HF writes null for "not set" (q_lora_rank,
// n_routed_experts, rope_scaling).
class Fields {
 public:
  Fields(const json& obj, const std::string& source, std::string prefix = "")
      : obj_(obj), source_(source), prefix_(std::move(prefix)) {}

  bool has(const char* key) const {
    auto it = obj_.find(key);
    return it != obj_.end() && !it->is_null();
  }
  const json* find(const char* key) const {
    auto it = obj_.find(key);
    return it != obj_.end() && !it->is_null() ? &*it : nullptr;
  }
  std::string name(const char* key) const { return prefix_ + key; }

  int64_t required_int(const char* key, int64_t min_value) const {
    CTXPAR_CHECK_INPUT(has(key), "{}: required field '{}' is missing (or null)", source_,
                       name(key));
    return to_int(key, min_value);
  }
  int64_t optional_int(const char* key, int64_t fallback, int64_t min_value) const {
    return has(key) ? to_int(key, min_value) : fallback;
  }
  double optional_double(const char* key, double fallback) const {
    const json* v = find(key);
    if (!v) return fallback;
    CTXPAR_CHECK_INPUT(v->is_number(), "{}: field '{}' must be a number, got {}", source_,
                       name(key), v->dump());
    return v->get<double>();
  }
  bool optional_bool(const char* key, bool fallback) const {
    const json* v = find(key);
    if (!v) return fallback;
    CTXPAR_CHECK_INPUT(v->is_boolean(), "{}: field '{}' must be true or false, got {}", source_,
                       name(key), v->dump());
    return v->get<bool>();
  }
  std::optional<std::string> optional_string(const char* key) const {
    const json* v = find(key);
    if (!v) return std::nullopt;
    CTXPAR_CHECK_INPUT(v->is_string(), "{}: field '{}' must be a string, got {}", source_,
                       name(key), v->dump());
    return v->get<std::string>();
  }
  // An int or a list of ints (token ids); empty when absent.
  std::vector<int64_t> int_or_list(const char* key) const {
    const json* v = find(key);
    if (!v) return {};
    std::vector<int64_t> out;
    auto take = [&](const json& x) {
      CTXPAR_CHECK_INPUT(x.is_number_integer() && x.get<int64_t>() >= 0,
                         "{}: field '{}' must be a non-negative integer or a list of them, got {}",
                         source_, name(key), v->dump());
      out.push_back(x.get<int64_t>());
    };
    if (v->is_array()) {
      for (const json& x : *v) take(x);
    } else {
      take(*v);
    }
    return out;
  }

 private:
  int64_t to_int(const char* key, int64_t min_value) const {
    const json& v = obj_.at(key);
    // Unsigned values above int64 range are rejected too, via the comparison below.
    CTXPAR_CHECK_INPUT(v.is_number_integer(), "{}: field '{}' must be an integer, got {}", source_,
                       name(key), v.dump());
    CTXPAR_CHECK_INPUT(
        !v.is_number_unsigned() ||
            v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
        "{}: field '{}' = {} is out of range", source_, name(key), v.dump());
    const auto x = v.get<int64_t>();
    CTXPAR_CHECK_INPUT(x >= min_value, "{}: field '{}' = {} must be >= {}", source_, name(key), x,
                       min_value);
    return x;
  }

  const json& obj_;
  const std::string& source_;
  std::string prefix_;
};

ModelArch parse_arch(const json& root, const std::string& source) {
  auto it = root.find("architectures");
  CTXPAR_CHECK_INPUT(it != root.end() && it->is_array() && !it->empty() && (*it)[0].is_string(),
                     "{}: required field 'architectures' is missing or not a list of strings; "
                     "supported architectures: {}",
                     source, kSupportedArchs);
  const std::string name = (*it)[0].get<std::string>();
  if (name == "LlamaForCausalLM") return ModelArch::kLlama;
  if (name == "Qwen2ForCausalLM") return ModelArch::kQwen2;
  if (name == "DeepseekV2ForCausalLM") return ModelArch::kDeepseekV2;
  if (name == "DeepseekV3ForCausalLM") return ModelArch::kDeepseekV3;
  if (name == "DeepseekV32ForCausalLM") return ModelArch::kDeepseekV32;
  if (name == "GlmMoeDsaForCausalLM") return ModelArch::kGlmMoeDsa;
  if (name == "Qwen3ForCausalLM") return ModelArch::kQwen3;
  if (name == "Qwen3MoeForCausalLM") return ModelArch::kQwen3Moe;
  CTXPAR_INPUT_FAIL("{}: architectures[0] = '{}' is not supported; supported architectures: {}",
                    source, name, kSupportedArchs);
}

RopeType parse_rope_type(const std::string& s, const std::string& source, const std::string& key) {
  if (s == "default") return RopeType::kDefault;
  if (s == "linear") return RopeType::kLinear;
  if (s == "llama3") return RopeType::kLlama3;
  if (s == "yarn") return RopeType::kYarn;
  CTXPAR_INPUT_FAIL("{}: {} = '{}' is not supported; supported: default, linear, llama3, yarn",
                    source, key, s);
}

// rope_theta lives at the top level (older configs) or inside rope_parameters (newer
// transformers); the scaling parameters live in rope_scaling or rope_parameters.
RopeConfig parse_rope(const json& root, const Fields& top, int64_t max_position,
                      const std::string& source) {
  RopeConfig rope;
  rope.theta = top.optional_double("rope_theta", rope.theta);
  const char* block_key = nullptr;
  if (top.has("rope_parameters")) {
    block_key = "rope_parameters";
  } else if (top.has("rope_scaling")) {
    block_key = "rope_scaling";
  }
  if (!block_key) return rope;
  const json& block = root.at(block_key);
  CTXPAR_CHECK_INPUT(block.is_object(), "{}: field '{}' must be an object or null, got {}", source,
                     block_key, block.dump());
  const Fields f(block, source, std::string(block_key) + ".");
  rope.theta = f.optional_double("rope_theta", rope.theta);
  std::optional<std::string> type = f.optional_string("rope_type");
  std::string type_key = f.name("rope_type");
  if (!type) {
    type = f.optional_string("type");
    type_key = f.name("type");
  }
  rope.type = type ? parse_rope_type(*type, source, type_key) : RopeType::kDefault;

  auto positive = [&](const char* key, double value) {
    CTXPAR_CHECK_INPUT(value > 0, "{}: {} = {} must be > 0", source, f.name(key), value);
    return value;
  };
  switch (rope.type) {
    case RopeType::kDefault:
      break;
    case RopeType::kLinear:
      CTXPAR_CHECK_INPUT(f.has("factor"), "{}: {} is 'linear' but '{}' is missing", source,
                         type_key, f.name("factor"));
      rope.factor = positive("factor", f.optional_double("factor", 1.0));
      break;
    case RopeType::kLlama3:
      for (const char* key :
           {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}) {
        CTXPAR_CHECK_INPUT(f.has(key), "{}: {} is 'llama3' but '{}' is missing", source, type_key,
                           f.name(key));
      }
      rope.factor = positive("factor", f.optional_double("factor", 1.0));
      rope.low_freq_factor = positive("low_freq_factor", f.optional_double("low_freq_factor", 1));
      rope.high_freq_factor =
          positive("high_freq_factor", f.optional_double("high_freq_factor", 4));
      CTXPAR_CHECK_INPUT(rope.high_freq_factor > rope.low_freq_factor,
                         "{}: llama3 rope needs high_freq_factor ({}) > low_freq_factor ({})",
                         source, rope.high_freq_factor, rope.low_freq_factor);
      rope.original_max_position_embeddings = f.required_int("original_max_position_embeddings", 1);
      break;
    case RopeType::kYarn:
      CTXPAR_CHECK_INPUT(f.has("factor"), "{}: {} is 'yarn' but '{}' is missing", source, type_key,
                         f.name("factor"));
      rope.factor = positive("factor", f.optional_double("factor", 1.0));
      rope.original_max_position_embeddings =
          f.optional_int("original_max_position_embeddings", max_position, 1);
      rope.beta_fast = f.optional_double("beta_fast", rope.beta_fast);
      rope.beta_slow = f.optional_double("beta_slow", rope.beta_slow);
      rope.mscale = f.optional_double("mscale", rope.mscale);
      rope.mscale_all_dim = f.optional_double("mscale_all_dim", rope.mscale_all_dim);
      rope.attention_factor = f.optional_double("attention_factor", rope.attention_factor);
      CTXPAR_CHECK_INPUT(rope.attention_factor >= 0, "{}: {} = {} must be > 0 (or absent)", source,
                         f.name("attention_factor"), rope.attention_factor);
      // Equal betas are valid (Kimi-K2 uses 1 and 1): the ramp then spans one dim.
      CTXPAR_CHECK_INPUT(rope.beta_fast >= rope.beta_slow,
                         "{}: yarn rope needs beta_fast ({}) >= beta_slow ({})", source,
                         rope.beta_fast, rope.beta_slow);
      break;
  }
  CTXPAR_CHECK_INPUT(rope.theta > 0, "{}: rope_theta = {} must be > 0", source, rope.theta);
  return rope;
}

DType parse_config_dtype(const Fields& f, const std::string& source) {
  for (const char* key : {"dtype", "torch_dtype"}) {
    if (auto s = f.optional_string(key)) {
      if (*s == "float32") return DType::kF32;
      if (*s == "bfloat16") return DType::kBF16;
      if (*s == "float16") return DType::kF16;
      CTXPAR_INPUT_FAIL("{}: {} = '{}' is not supported; supported: float32, bfloat16, float16",
                        source, key, *s);
    }
  }
  return DType::kF32;
}

void parse_mla(const Fields& f, ModelConfig& c) {
  c.mla.q_lora_rank = f.optional_int("q_lora_rank", 0, 1);
  c.mla.kv_lora_rank = f.required_int("kv_lora_rank", 1);
  c.mla.qk_nope_head_dim = f.required_int("qk_nope_head_dim", 1);
  c.mla.qk_rope_head_dim = f.required_int("qk_rope_head_dim", 2);
  c.mla.v_head_dim = f.required_int("v_head_dim", 1);
  CTXPAR_CHECK_INPUT(c.mla.qk_rope_head_dim % 2 == 0,
                     "{}: qk_rope_head_dim = {} must be even (RoPE rotates pairs)", c.source,
                     c.mla.qk_rope_head_dim);
  c.head_dim = c.mla.qk_nope_head_dim + c.mla.qk_rope_head_dim;
}

// A list-of-strings field (null or absent: empty), each entry checked by `valid`.
std::vector<std::string> string_list(const Fields& f, const char* key, const std::string& source) {
  std::vector<std::string> out;
  const json* v = f.find(key);
  if (!v) return out;
  CTXPAR_CHECK_INPUT(v->is_array(), "{}: field '{}' must be a list of strings, got {}", source,
                     f.name(key), v->dump());
  for (const json& x : *v) {
    CTXPAR_CHECK_INPUT(x.is_string(), "{}: field '{}' must be a list of strings, got {}", source,
                       f.name(key), v->dump());
    out.push_back(x.get<std::string>());
  }
  return out;
}

void parse_routing(const Fields& f, ModelConfig& c, std::string_view default_scoring,
                   std::string_view default_method) {
  MoeConfig& m = c.moe;
  const std::string scoring =
      f.optional_string("scoring_func").value_or(std::string(default_scoring));
  if (scoring == "softmax") {
    m.scoring_func = ScoringFunc::kSoftmax;
  } else if (scoring == "sigmoid") {
    m.scoring_func = ScoringFunc::kSigmoid;
  } else {
    CTXPAR_INPUT_FAIL("{}: scoring_func = '{}' is not supported; supported: softmax, sigmoid",
                      c.source, scoring);
  }
  // "gready" is the default spelled in DeepSeek-V2's own configuration code.
  const std::string method = f.optional_string("topk_method").value_or(std::string(default_method));
  if (method == "greedy" || method == "gready") {
    m.topk_method = TopkMethod::kGreedy;
  } else if (method == "group_limited_greedy") {
    m.topk_method = TopkMethod::kGroupLimitedGreedy;
  } else if (method == "noaux_tc") {
    m.topk_method = TopkMethod::kNoauxTc;
  } else {
    CTXPAR_INPUT_FAIL(
        "{}: topk_method = '{}' is not supported; supported: greedy, "
        "group_limited_greedy, noaux_tc",
        c.source, method);
  }
}

void check_moe(ModelConfig& c) {
  const MoeConfig& m = c.moe;
  CTXPAR_CHECK_INPUT(m.num_experts_per_tok <= m.n_routed_experts,
                     "{}: num_experts_per_tok = {} exceeds n_routed_experts = {}", c.source,
                     m.num_experts_per_tok, m.n_routed_experts);
  CTXPAR_CHECK_INPUT(m.n_routed_experts % m.n_group == 0,
                     "{}: n_group = {} must divide n_routed_experts = {}", c.source, m.n_group,
                     m.n_routed_experts);
  CTXPAR_CHECK_INPUT(m.topk_group <= m.n_group, "{}: topk_group = {} exceeds n_group = {}",
                     c.source, m.topk_group, m.n_group);
  if (m.topk_method != TopkMethod::kGreedy) {
    // Group-limited routing picks experts only from the topk_group best groups.
    CTXPAR_CHECK_INPUT(
        m.num_experts_per_tok <= m.topk_group * (m.n_routed_experts / m.n_group),
        "{}: num_experts_per_tok = {} exceeds the experts in topk_group = {} groups of "
        "{}",
        c.source, m.num_experts_per_tok, m.topk_group, m.n_routed_experts / m.n_group);
  }
}

// DeepSeek V2/V3/V3.2 and GLM-5 experts.
void parse_moe(const Fields& f, ModelConfig& c) {
  MoeConfig& m = c.moe;
  m.n_routed_experts = f.optional_int("n_routed_experts", 0, 1);
  if (m.n_routed_experts == 0) return;  // dense model
  m.n_shared_experts = f.optional_int("n_shared_experts", 0, 0);
  m.num_experts_per_tok = f.required_int("num_experts_per_tok", 1);
  m.moe_intermediate_size = f.required_int("moe_intermediate_size", 1);
  m.first_k_dense_replace = f.optional_int("first_k_dense_replace", 0, 0);
  m.moe_layer_freq = f.optional_int("moe_layer_freq", 1, 1);
  m.n_group = f.optional_int("n_group", 1, 1);
  m.topk_group = f.optional_int("topk_group", 1, 1);
  m.routed_scaling_factor = f.optional_double("routed_scaling_factor", 1.0);
  m.norm_topk_prob = f.optional_bool("norm_topk_prob", false);
  // transformers' V3-family routers (V3, V3.2, GLM-5) always use sigmoid scores with the
  // noaux_tc group choice; V2's default is softmax / greedy.
  const bool v3_family = c.arch != ModelArch::kDeepseekV2;
  parse_routing(f, c, v3_family ? "sigmoid" : "softmax", v3_family ? "noaux_tc" : "greedy");
  check_moe(c);

  const std::vector<std::string> types = string_list(f, "mlp_layer_types", c.source);
  m.moe_layers.assign(static_cast<size_t>(c.num_hidden_layers), false);
  if (!types.empty()) {
    CTXPAR_CHECK_INPUT(static_cast<int64_t>(types.size()) == c.num_hidden_layers,
                       "{}: mlp_layer_types has {} entries but num_hidden_layers = {}", c.source,
                       types.size(), c.num_hidden_layers);
    for (size_t i = 0; i < types.size(); ++i) {
      CTXPAR_CHECK_INPUT(types[i] == "dense" || types[i] == "sparse",
                         "{}: mlp_layer_types[{}] = '{}' is not valid; use \"dense\" or \"sparse\"",
                         c.source, i, types[i]);
      m.moe_layers[i] = types[i] == "sparse";
    }
    return;
  }
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    m.moe_layers[static_cast<size_t>(l)] =
        l >= m.first_k_dense_replace && l % m.moe_layer_freq == 0;
  }
}

// Qwen3-MoE: num_experts (saved by transformers 5 as num_local_experts), softmax top-k,
// renormalised when norm_topk_prob, no shared expert, no routed scaling.
void parse_qwen3_moe(const Fields& f, ModelConfig& c) {
  MoeConfig& m = c.moe;
  const char* key = f.has("num_experts") ? "num_experts" : "num_local_experts";
  m.n_routed_experts = f.required_int(key, 1);
  m.num_experts_per_tok = f.required_int("num_experts_per_tok", 1);
  m.moe_intermediate_size = f.required_int("moe_intermediate_size", 1);
  m.norm_topk_prob = f.optional_bool("norm_topk_prob", false);
  m.scoring_func = ScoringFunc::kSoftmax;
  m.topk_method = TopkMethod::kGreedy;
  check_moe(c);
  const int64_t step = f.optional_int("decoder_sparse_step", 1, 1);
  std::vector<bool> dense_only(static_cast<size_t>(c.num_hidden_layers), false);
  if (const json* v = f.find("mlp_only_layers")) {
    CTXPAR_CHECK_INPUT(v->is_array(),
                       "{}: field 'mlp_only_layers' must be a list of layer indices, got {}",
                       c.source, v->dump());
    for (const json& x : *v) {
      CTXPAR_CHECK_INPUT(
          x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() < c.num_hidden_layers,
          "{}: mlp_only_layers entry {} is not a layer index in [0, {})", c.source, x.dump(),
          c.num_hidden_layers);
      dense_only[x.get<size_t>()] = true;
    }
  }
  m.moe_layers.assign(static_cast<size_t>(c.num_hidden_layers), false);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    m.moe_layers[static_cast<size_t>(l)] =
        !dense_only[static_cast<size_t>(l)] && (l + 1) % step == 0;
  }
}

void parse_indexer(const Fields& f, ModelConfig& c) {
  IndexerConfig& x = c.indexer;
  x.index_n_heads = f.required_int("index_n_heads", 1);
  x.index_head_dim = f.required_int("index_head_dim", 1);
  x.index_topk = f.required_int("index_topk", 1);
  CTXPAR_CHECK_INPUT(x.index_head_dim >= c.mla.qk_rope_head_dim,
                     "{}: index_head_dim = {} must hold the rope part qk_rope_head_dim = {}",
                     c.source, x.index_head_dim, c.mla.qk_rope_head_dim);
  x.interleaved_rope = c.arch == ModelArch::kGlmMoeDsa;

  const size_t layers = static_cast<size_t>(c.num_hidden_layers);
  std::vector<std::string> types;
  std::string types_key;
  if (c.arch == ModelArch::kGlmMoeDsa) {
    if (f.has("indexer_types")) {
      types = string_list(f, "indexer_types", c.source);
      types_key = "indexer_types";
    } else if (const json* pattern = f.find("index_topk_pattern")) {
      types_key = "index_topk_pattern";
      if (pattern->is_string()) {
        for (char ch : pattern->get<std::string>()) {
          CTXPAR_CHECK_INPUT(ch == 'F' || ch == 'S',
                             "{}: index_topk_pattern {} may hold only 'F' (full) and 'S' (shared)",
                             c.source, pattern->dump());
          types.emplace_back(ch == 'F' ? "full" : "shared");
        }
      } else {
        types = string_list(f, "index_topk_pattern", c.source);
      }
    } else {
      const int64_t freq = std::max<int64_t>(f.optional_int("index_topk_freq", 1, 0), 1);
      const int64_t offset = f.optional_int("index_skip_topk_offset", 2, 0);
      for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
        types.emplace_back(std::max<int64_t>(i - offset + 1, 0) % freq == 0 ? "full" : "shared");
      }
      types_key = "index_topk_freq / index_skip_topk_offset";
    }
  }
  if (types.empty()) {
    x.full_layers.assign(layers, true);
    return;
  }
  CTXPAR_CHECK_INPUT(types.size() == layers, "{}: {} gives {} layers but num_hidden_layers = {}",
                     c.source, types_key, types.size(), c.num_hidden_layers);
  x.full_layers.assign(layers, false);
  for (size_t i = 0; i < layers; ++i) {
    CTXPAR_CHECK_INPUT(types[i] == "full" || types[i] == "shared",
                       "{}: {}[{}] = '{}' is not valid; use \"full\" or \"shared\"", c.source,
                       types_key, i, types[i]);
    x.full_layers[i] = types[i] == "full";
  }
  CTXPAR_CHECK_INPUT(
      x.full_layers[0],
      "{}: {} starts with a \"shared\" layer, but a shared layer reuses the top-k of the "
      "previous full layer; layer 0 must be \"full\"",
      c.source, types_key);
}

// quant_method "fp8": block-scaled ([128, 128] weight_block_size, DeepSeek / Qwen) or, without
// weight_block_size, per-tensor (AutoFP8 / vLLM's Fp8Config) e4m3 weights.
void parse_fp8_method(const Fields& f, const std::string& source, QuantizationConfig& out) {
  const std::string fmt = f.optional_string("fmt").value_or("e4m3");
  CTXPAR_CHECK_INPUT(fmt == "e4m3",
                     "{}: quantization_config.fmt = '{}' is not supported; supported: e4m3", source,
                     fmt);
  if (const json* block = f.find("weight_block_size")) {
    CTXPAR_CHECK_INPUT(block->is_array() && block->size() == 2 && (*block)[0].is_number_integer() &&
                           (*block)[1].is_number_integer(),
                       "{}: quantization_config.weight_block_size must be [rows, cols], got {}",
                       source, block->dump());
    out.block_rows = (*block)[0].get<int64_t>();
    out.block_cols = (*block)[1].get<int64_t>();
    CTXPAR_CHECK_INPUT(
        out.block_rows == 128 && out.block_cols == 128,
        "{}: quantization_config.weight_block_size = {} is not supported; the FP8 kernels "
        "run [128, 128] blocks (or per-tensor scales, without weight_block_size)",
        source, block->dump());
  } else {
    out.block_rows = out.block_cols = 0;
  }
  const std::string scale_fmt = f.optional_string("scale_fmt").value_or("");
  CTXPAR_CHECK_INPUT(
      scale_fmt.empty() || scale_fmt == "ue8m0",
      "{}: quantization_config.scale_fmt = '{}' is not supported; supported: ue8m0 (or "
      "absent)",
      source, scale_fmt);
  out.ue8m0_scales = scale_fmt == "ue8m0";
  // "static" checkpoints carry input_scale for FP8 activations; ctxpar keeps activations in
  // bf16 / f32 (W8A16) and does not read them.
  const std::string scheme = f.optional_string("activation_scheme").value_or("dynamic");
  CTXPAR_CHECK_INPUT(
      scheme == "dynamic" || scheme == "static",
      "{}: quantization_config.activation_scheme = '{}' is not supported; supported: "
      "dynamic, static",
      source, scheme);
  for (const char* key : {"modules_to_not_convert", "ignored_layers"}) {
    for (std::string& m : string_list(f, key, source)) out.modules_not_converted.push_back(m);
  }
}

// quant_method "compressed-tensors" (llm-compressor): every config group's weights must be
// 8-bit float per tensor, per channel or in 128×128 blocks. Input activations (dynamic per
// token, or static with input_scale) are not quantized here: W8A16.
void parse_compressed_tensors(const Fields& f, const std::string& source, QuantizationConfig& out) {
  out.block_rows = out.block_cols = 0;  // unless a group has blocks
  const std::string format = f.optional_string("format").value_or("float-quantized");
  CTXPAR_CHECK_INPUT(
      format == "float-quantized" || format == "naive-quantized",
      "{}: quantization_config.format = '{}' is not supported; ctxpar reads compressed-tensors "
      "FP8 weights (format float-quantized or naive-quantized)",
      source, format);
  const json* groups = f.find("config_groups");
  CTXPAR_CHECK_INPUT(groups != nullptr && groups->is_object() && !groups->empty(),
                     "{}: quantization_config.config_groups must be a non-empty object, got {}",
                     source, groups ? groups->dump() : "nothing");
  for (const auto& [name, group] : groups->items()) {
    const std::string where = "quantization_config.config_groups." + name;
    CTXPAR_CHECK_INPUT(group.is_object(), "{}: {} must be an object, got {}", source, where,
                       group.dump());
    const json* w = Fields(group, source).find("weights");
    CTXPAR_CHECK_INPUT(w != nullptr && w->is_object(), "{}: {}.weights must be an object, got {}",
                       source, where, w ? w->dump() : "nothing");
    const Fields wf(*w, source, where + ".weights.");
    const std::string type = wf.optional_string("type").value_or("");
    const int64_t bits = wf.optional_int("num_bits", 0, 0);
    CTXPAR_CHECK_INPUT(type == "float" && bits == 8,
                       "{}: {}.weights is {}-bit '{}'; ctxpar reads 8-bit float (FP8 e4m3) "
                       "compressed-tensors weights only",
                       source, where, bits, type);
    const std::string strategy = wf.optional_string("strategy").value_or("");
    CTXPAR_CHECK_INPUT(strategy == "tensor" || strategy == "channel" || strategy == "block",
                       "{}: {}.weights.strategy = '{}' is not supported; supported: tensor, "
                       "channel, block",
                       source, where, strategy);
    if (strategy == "block") {
      const json* bs = wf.find("block_structure");
      CTXPAR_CHECK_INPUT(bs != nullptr && *bs == json::array({128, 128}),
                         "{}: {}.weights.block_structure = {} is not supported; the FP8 kernels "
                         "run [128, 128] blocks",
                         source, where, bs ? bs->dump() : "null");
      out.block_rows = out.block_cols = 128;
    }
  }
  for (std::string& m : string_list(f, "ignore", source)) {
    if (m.starts_with("re:")) {
      try {
        out.ignore_patterns.emplace_back(std::string_view(m).substr(3));
      } catch (const InputError& e) {
        CTXPAR_INPUT_FAIL("{}: quantization_config.ignore: {}", source, e.what());
      }
    } else {
      out.modules_not_converted.push_back(std::move(m));
    }
  }
}

QuantizationConfig parse_quantization(const json& q, const std::string& source) {
  CTXPAR_CHECK_INPUT(q.is_object(), "{}: quantization_config must be an object, got {}", source,
                     q.dump());
  const Fields f(q, source, "quantization_config.");
  QuantizationConfig out;
  out.method = f.optional_string("quant_method").value_or("");
  if (out.method == "fp8") {
    parse_fp8_method(f, source, out);
  } else if (out.method == "compressed-tensors") {
    parse_compressed_tensors(f, source, out);
  } else if (out.method == "fbgemm_fp8") {  // per-channel e4m3 weights (Meta's FP8 releases)
    out.block_rows = out.block_cols = 0;
    for (std::string& m : string_list(f, "modules_to_not_convert", source))
      out.modules_not_converted.push_back(std::move(m));
  } else {
    CTXPAR_INPUT_FAIL(
        "{}: quantization_config.quant_method = '{}' is not supported; supported: fp8 "
        "(block-scaled or per-tensor e4m3), compressed-tensors (FP8 weights), fbgemm_fp8",
        source, out.method);
  }
  return out;
}

}  // namespace

std::string_view arch_name(ModelArch arch) {
  switch (arch) {
    case ModelArch::kLlama:
      return "LlamaForCausalLM";
    case ModelArch::kQwen2:
      return "Qwen2ForCausalLM";
    case ModelArch::kDeepseekV2:
      return "DeepseekV2ForCausalLM";
    case ModelArch::kDeepseekV3:
      return "DeepseekV3ForCausalLM";
    case ModelArch::kDeepseekV32:
      return "DeepseekV32ForCausalLM";
    case ModelArch::kGlmMoeDsa:
      return "GlmMoeDsaForCausalLM";
    case ModelArch::kQwen3:
      return "Qwen3ForCausalLM";
    case ModelArch::kQwen3Moe:
      return "Qwen3MoeForCausalLM";
  }
  return "unknown";
}

std::string_view rope_type_name(RopeType type) {
  switch (type) {
    case RopeType::kDefault:
      return "default";
    case RopeType::kLinear:
      return "linear";
    case RopeType::kLlama3:
      return "llama3";
    case RopeType::kYarn:
      return "yarn";
  }
  return "unknown";
}

std::string_view scoring_func_name(ScoringFunc f) {
  return f == ScoringFunc::kSoftmax ? "softmax" : "sigmoid";
}

std::string_view topk_method_name(TopkMethod m) {
  switch (m) {
    case TopkMethod::kGreedy:
      return "greedy";
    case TopkMethod::kGroupLimitedGreedy:
      return "group_limited_greedy";
    case TopkMethod::kNoauxTc:
      return "noaux_tc";
  }
  return "unknown";
}

bool QuantizationConfig::is_fp8() const {
  return method == "fp8" || method == "compressed-tensors" || method == "fbgemm_fp8";
}

bool QuantizationConfig::excludes(const std::string& tensor_name) const {
  const size_t dot = tensor_name.rfind('.');
  const std::string module = dot == std::string::npos ? tensor_name : tensor_name.substr(0, dot);
  const std::string padded = "." + module + ".";
  for (const std::string& m : modules_not_converted) {
    if (!m.empty() && padded.find("." + m + ".") != std::string::npos) return true;
  }
  for (const ModulePattern& p : ignore_patterns) {
    if (p.matches(module)) return true;
  }
  return false;
}

bool ModelConfig::is_mla() const {
  return arch == ModelArch::kDeepseekV2 || arch == ModelArch::kDeepseekV3 ||
         arch == ModelArch::kDeepseekV32 || arch == ModelArch::kGlmMoeDsa;
}

bool ModelConfig::is_sparse() const {
  return arch == ModelArch::kDeepseekV32 || arch == ModelArch::kGlmMoeDsa;
}

bool ModelConfig::is_moe_layer(int64_t layer) const {
  CTXPAR_CHECK_INPUT(layer >= 0 && layer < num_hidden_layers,
                     "{}: layer index {} out of range [0, {})", source, layer, num_hidden_layers);
  if (!is_moe()) return false;
  if (!moe.moe_layers.empty()) return moe.moe_layers[static_cast<size_t>(layer)];
  return layer >= moe.first_k_dense_replace && layer % moe.moe_layer_freq == 0;
}

bool ModelConfig::has_indexer(int64_t layer) const {
  CTXPAR_CHECK_INPUT(layer >= 0 && layer < num_hidden_layers,
                     "{}: layer index {} out of range [0, {})", source, layer, num_hidden_layers);
  if (!is_sparse()) return false;
  return indexer.full_layers.empty() || indexer.full_layers[static_cast<size_t>(layer)];
}

ModelConfig parse_model_config(std::string_view json_text, const std::string& source) {
  json root;
  try {
    root = json::parse(json_text.begin(), json_text.end());
  } catch (const json::exception& e) {
    CTXPAR_INPUT_FAIL("{}: not valid JSON: {}", source, e.what());
  }
  CTXPAR_CHECK_INPUT(root.is_object(), "{}: a config must be a JSON object, got {}", source,
                     root.type_name());

  ModelConfig c;
  c.source = source;
  c.arch = parse_arch(root, source);
  const Fields f(root, source);
  c.model_type = f.optional_string("model_type").value_or("");

  c.vocab_size = f.required_int("vocab_size", 1);
  c.hidden_size = f.required_int("hidden_size", 1);
  c.intermediate_size = f.required_int("intermediate_size", 1);
  c.num_hidden_layers = f.required_int("num_hidden_layers", 1);
  c.num_attention_heads = f.required_int("num_attention_heads", 1);
  c.num_key_value_heads = f.optional_int("num_key_value_heads", c.num_attention_heads, 1);
  c.max_position_embeddings = f.required_int("max_position_embeddings", 1);
  c.rms_norm_eps = f.optional_double("rms_norm_eps", c.rms_norm_eps);
  CTXPAR_CHECK_INPUT(c.rms_norm_eps > 0, "{}: rms_norm_eps = {} must be > 0", source,
                     c.rms_norm_eps);
  c.rope = parse_rope(root, f, c.max_position_embeddings, source);
  c.tie_word_embeddings = f.optional_bool("tie_word_embeddings", false);
  c.mlp_bias = f.optional_bool("mlp_bias", false);
  c.attention_bias = f.optional_bool("attention_bias", false);
  c.dtype = parse_config_dtype(f, source);

  // Activation: every supported architecture uses SiLU-gated MLPs; refuse anything else
  // rather than run a different function silently.
  const std::string act = f.optional_string("hidden_act").value_or("silu");
  CTXPAR_CHECK_INPUT(act == "silu", "{}: hidden_act = '{}' is not supported; supported: silu",
                     source, act);

  const std::vector<int64_t> bos = f.int_or_list("bos_token_id");
  c.bos_token_id = bos.empty() ? -1 : bos.front();
  c.eos_token_ids = f.int_or_list("eos_token_id");
  for (int64_t id : bos) {
    CTXPAR_CHECK_INPUT(id < c.vocab_size, "{}: bos_token_id {} is not below vocab_size {}", source,
                       id, c.vocab_size);
  }
  for (int64_t id : c.eos_token_ids) {
    CTXPAR_CHECK_INPUT(id < c.vocab_size, "{}: eos_token_id {} is not below vocab_size {}", source,
                       id, c.vocab_size);
  }

  if (const json* q = f.find("quantization_config"))
    c.quantization = parse_quantization(*q, source);
  c.num_nextn_predict_layers = f.optional_int("num_nextn_predict_layers", 0, 0);

  switch (c.arch) {
    case ModelArch::kLlama:
      c.qkv_bias = c.o_proj_bias = c.attention_bias;
      break;
    case ModelArch::kQwen2:
      // Qwen2 always has q/k/v biases and no o_proj bias, whatever the config says.
      c.qkv_bias = true;
      c.o_proj_bias = false;
      CTXPAR_CHECK_INPUT(
          !f.optional_bool("use_sliding_window", false),
          "{}: use_sliding_window = true is not supported (ctxpar attends to the full "
          "context); set it to false",
          source);
      break;
    case ModelArch::kQwen3:
    case ModelArch::kQwen3Moe:
      // Qwen3's attention_bias covers q, k, v and o alike (false in every release).
      c.qkv_bias = c.o_proj_bias = c.attention_bias;
      c.qk_norm = true;
      CTXPAR_CHECK_INPUT(
          !f.optional_bool("use_sliding_window", false),
          "{}: use_sliding_window = true is not supported (ctxpar attends to the full "
          "context); set it to false",
          source);
      if (c.arch == ModelArch::kQwen3Moe) parse_qwen3_moe(f, c);
      break;
    case ModelArch::kDeepseekV2:
    case ModelArch::kDeepseekV3:
    case ModelArch::kDeepseekV32:
    case ModelArch::kGlmMoeDsa:
      c.qkv_bias = c.o_proj_bias = c.attention_bias;
      parse_mla(f, c);
      parse_moe(f, c);
      if (c.is_sparse()) parse_indexer(f, c);
      break;
  }

  if (!c.is_mla()) {
    CTXPAR_CHECK_INPUT(c.num_attention_heads % c.num_key_value_heads == 0,
                       "{}: num_key_value_heads = {} must divide num_attention_heads = {}", source,
                       c.num_key_value_heads, c.num_attention_heads);
    if (f.has("head_dim")) {
      c.head_dim = f.required_int("head_dim", 1);
    } else {
      CTXPAR_CHECK_INPUT(c.hidden_size % c.num_attention_heads == 0,
                         "{}: head_dim is not given and hidden_size = {} is not divisible by "
                         "num_attention_heads = {}; add 'head_dim'",
                         source, c.hidden_size, c.num_attention_heads);
      c.head_dim = c.hidden_size / c.num_attention_heads;
    }
    CTXPAR_CHECK_INPUT(c.head_dim % 2 == 0, "{}: head_dim = {} must be even (RoPE rotates pairs)",
                       source, c.head_dim);
  }
  return c;
}

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  CTXPAR_CHECK_INPUT(in.good(), "cannot read model config '{}': file missing or unreadable", path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

ModelConfig load_model_config(const std::string& path) {
  return parse_model_config(read_text(path), path);
}

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> names;
  for (const BuiltinConfig& b : builtin_configs()) names.emplace_back(b.name);
  return names;
}

bool is_builtin_model(const std::string& model) {
  return model.rfind("builtin:", 0) == 0;
}

namespace {

// config.json text with vLLM's --hf-overrides applied: each key of the JSON object replaces the
// config's top-level key (the text models here have no sub-configs to merge into).
std::string with_hf_overrides(const std::string& text, const std::string& hf_overrides,
                              const std::string& source) {
  if (hf_overrides.empty()) return text;
  json overrides;
  try {
    overrides = json::parse(hf_overrides);
  } catch (const json::exception& e) {
    CTXPAR_INPUT_FAIL("--hf-overrides '{}' is not JSON: {}", hf_overrides, e.what());
  }
  CTXPAR_CHECK_INPUT(overrides.is_object(),
                     "--hf-overrides '{}' must be a JSON object of config.json keys, e.g. "
                     "'{{\"rope_scaling\": {{\"rope_type\": \"yarn\", \"factor\": 4.0, "
                     "\"original_max_position_embeddings\": 32768}}}}'",
                     hf_overrides);
  if (overrides.empty()) return text;
  json config;
  try {
    config = json::parse(text);
  } catch (const json::exception& e) {
    CTXPAR_INPUT_FAIL("{}: not valid JSON: {}", source, e.what());
  }
  CTXPAR_CHECK_INPUT(config.is_object(), "{}: must be a JSON object", source);
  for (const auto& [key, value] : overrides.items()) config[key] = value;
  // transformers 5 writes RoPE as rope_parameters (its rope_theta included), which parse_rope
  // reads before rope_scaling: a rope_scaling override (the form vLLM's recipes give) goes
  // into it, so the theta stays and the scaling is not silently lost.
  if (overrides.contains("rope_scaling") && overrides["rope_scaling"].is_object() &&
      !overrides.contains("rope_parameters") && config.contains("rope_parameters") &&
      config["rope_parameters"].is_object()) {
    for (const auto& [key, value] : overrides["rope_scaling"].items())
      config["rope_parameters"][key == "type" ? "rope_type" : key] = value;
  }
  return config.dump();
}

}  // namespace

ModelConfig resolve_model_config(const std::string& model, const std::string& hf_overrides) {
  if (is_builtin_model(model)) {
    const std::string name = model.substr(8);
    for (const BuiltinConfig& b : builtin_configs()) {
      if (b.name == name) {
        ModelConfig c =
            parse_model_config(with_hf_overrides(std::string(b.json), hf_overrides, model), model);
        c.config_only = b.config_only;
        return c;
      }
    }
    std::string list;
    for (const BuiltinConfig& b : builtin_configs()) {
      list += (list.empty() ? "builtin:" : ", builtin:") + std::string(b.name);
    }
    CTXPAR_INPUT_FAIL("unknown built-in model '{}'; built-ins: {}", model, list);
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string path = model;
  if (fs::is_directory(model, ec)) {
    path = (fs::path(model) / "config.json").string();
    CTXPAR_CHECK_INPUT(fs::is_regular_file(path, ec),
                       "model directory '{}' has no config.json (looked for '{}')", model, path);
  } else {
    CTXPAR_CHECK_INPUT(fs::is_regular_file(model, ec),
                       "model '{}' is neither builtin:NAME, a directory with config.json, nor a "
                       "config.json file",
                       model);
  }
  return parse_model_config(with_hf_overrides(read_text(path), hf_overrides, path), path);
}

int64_t derived_max_model_len(const ModelConfig& c) {
  switch (c.rope.type) {
    case RopeType::kLinear:
      return static_cast<int64_t>(static_cast<double>(c.max_position_embeddings) * c.rope.factor);
    case RopeType::kYarn:
      return static_cast<int64_t>(static_cast<double>(c.rope.original_max_position_embeddings) *
                                  c.rope.factor);
    default:  // default RoPE, llama3 (whose max_position_embeddings is already the long one)
      return c.max_position_embeddings;
  }
}

}  // namespace ctxpar::model
