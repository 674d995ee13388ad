#include "ctxpar/model/model_config.h"

#include <nlohmann/json.hpp>

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
    "LlamaForCausalLM, Qwen2ForCausalLM, DeepseekV2ForCausalLM, DeepseekV3ForCausalLM, "
    "DeepseekV32ForCausalLM";

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
      CTXPAR_CHECK_INPUT(rope.beta_fast > rope.beta_slow,
                         "{}: yarn rope needs beta_fast ({}) > beta_slow ({})", source,
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

  const std::string scoring = f.optional_string("scoring_func").value_or("softmax");
  if (scoring == "softmax") {
    m.scoring_func = ScoringFunc::kSoftmax;
  } else if (scoring == "sigmoid") {
    m.scoring_func = ScoringFunc::kSigmoid;
  } else {
    CTXPAR_INPUT_FAIL("{}: scoring_func = '{}' is not supported; supported: softmax, sigmoid",
                      c.source, scoring);
  }
  // "gready" is the default spelled in DeepSeek-V2's own configuration code.
  const std::string method = f.optional_string("topk_method").value_or("greedy");
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

void parse_indexer(const Fields& f, ModelConfig& c) {
  c.indexer.index_n_heads = f.required_int("index_n_heads", 1);
  c.indexer.index_head_dim = f.required_int("index_head_dim", 1);
  c.indexer.index_topk = f.required_int("index_topk", 1);
  CTXPAR_CHECK_INPUT(c.indexer.index_head_dim >= c.mla.qk_rope_head_dim,
                     "{}: index_head_dim = {} must hold the rope part qk_rope_head_dim = {}",
                     c.source, c.indexer.index_head_dim, c.mla.qk_rope_head_dim);
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

bool ModelConfig::is_mla() const {
  return arch == ModelArch::kDeepseekV2 || arch == ModelArch::kDeepseekV3 ||
         arch == ModelArch::kDeepseekV32;
}

bool ModelConfig::is_sparse() const {
  return arch == ModelArch::kDeepseekV32;
}

bool ModelConfig::is_moe_layer(int64_t layer) const {
  CTXPAR_CHECK_INPUT(layer >= 0 && layer < num_hidden_layers,
                     "{}: layer index {} out of range [0, {})", source, layer, num_hidden_layers);
  return is_moe() && layer >= moe.first_k_dense_replace && layer % moe.moe_layer_freq == 0;
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

  if (const json* q = f.find("quantization_config")) {
    CTXPAR_CHECK_INPUT(q->is_object(), "{}: quantization_config must be an object, got {}", source,
                       q->dump());
    c.quantization_method =
        Fields(*q, source, "quantization_config.").optional_string("quant_method").value_or("");
  }

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
    case ModelArch::kDeepseekV2:
    case ModelArch::kDeepseekV3:
    case ModelArch::kDeepseekV32:
      c.qkv_bias = c.o_proj_bias = c.attention_bias;
      parse_mla(f, c);
      parse_moe(f, c);
      if (c.arch == ModelArch::kDeepseekV32) parse_indexer(f, c);
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

ModelConfig load_model_config(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  CTXPAR_CHECK_INPUT(in.good(), "cannot read model config '{}': file missing or unreadable", path);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_model_config(text.str(), path);
}

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> names;
  for (const BuiltinConfig& b : builtin_configs()) names.emplace_back(b.name);
  return names;
}

bool is_builtin_model(const std::string& model) {
  return model.rfind("builtin:", 0) == 0;
}

ModelConfig resolve_model_config(const std::string& model) {
  if (is_builtin_model(model)) {
    const std::string name = model.substr(8);
    for (const BuiltinConfig& b : builtin_configs()) {
      if (b.name == name) return parse_model_config(b.json, model);
    }
    std::string list;
    for (const BuiltinConfig& b : builtin_configs()) {
      list += (list.empty() ? "builtin:" : ", builtin:") + std::string(b.name);
    }
    CTXPAR_INPUT_FAIL("unknown built-in model '{}'; built-ins: {}", model, list);
  }
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(model, ec)) {
    const fs::path config = fs::path(model) / "config.json";
    CTXPAR_CHECK_INPUT(fs::is_regular_file(config, ec),
                       "model directory '{}' has no config.json (looked for '{}')", model,
                       config.string());
    return load_model_config(config.string());
  }
  CTXPAR_CHECK_INPUT(fs::is_regular_file(model, ec),
                     "model '{}' is neither builtin:NAME, a directory with config.json, nor a "
                     "config.json file",
                     model);
  return load_model_config(model);
}

}  // namespace ctxpar::model
