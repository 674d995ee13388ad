// ModelConfig: what the engine needs from a Hugging Face config.json, for the architectures
// ctxpar serves (Llama, Qwen2, Qwen3, Qwen3-MoE, DeepSeek-V2/V3/V3.2, GLM-5). One struct for
// all of them: fields an
// architecture does not use keep their defaults, and the helpers (is_mla, is_moe_layer,
// is_sparse) say which parts apply.
//
// Field names follow the HF config keys so a reader can map one to the other without a table.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ctxpar/core/dtype.h"
#include "ctxpar/model/module_pattern.h"

namespace ctxpar::model {

// architectures[0] of config.json.
enum class ModelArch {
  kLlama,        // LlamaForCausalLM
  kQwen2,        // Qwen2ForCausalLM
  kDeepseekV2,   // DeepseekV2ForCausalLM
  kDeepseekV3,   // DeepseekV3ForCausalLM
  kDeepseekV32,  // DeepseekV32ForCausalLM (V3 + Lightning Indexer, sparse attention)
  kGlmMoeDsa,    // GlmMoeDsaForCausalLM (GLM-5: V3.2 with shared-indexer layers)
  kQwen3,        // Qwen3ForCausalLM (Qwen2 without biases, per-head q/k RMSNorm)
  kQwen3Moe,     // Qwen3MoeForCausalLM (Qwen3 attention, softmax top-k experts)
};

// The HF class name, e.g. "LlamaForCausalLM".
std::string_view arch_name(ModelArch arch);

enum class RopeType { kDefault, kLinear, kLlama3, kYarn };
std::string_view rope_type_name(RopeType type);

// rope_theta plus rope_scaling (older configs) or rope_parameters (newer transformers); both
// spellings of the type key ("rope_type", "type") are accepted. Parameters a type does not use
// keep their defaults.
struct RopeConfig {
  RopeType type = RopeType::kDefault;
  double theta = 10000.0;
  double factor = 1.0;  // linear, llama3, yarn
  // llama3 and yarn: the context length the model was trained at. For yarn it defaults to
  // max_position_embeddings when the config does not give it.
  int64_t original_max_position_embeddings = 0;
  double low_freq_factor = 1.0;   // llama3
  double high_freq_factor = 4.0;  // llama3
  double beta_fast = 32.0;        // yarn
  double beta_slow = 1.0;         // yarn
  // yarn (DeepSeek form): attention temperature terms; 0 means "not given" (transformers'
  // None), where it turns the term off.
  double mscale = 0.0;
  double mscale_all_dim = 0.0;
  // yarn: explicit cos/sin magnitude (attention_factor); 0 means "derive it from factor and
  // mscale" (kernels::rope_magnitude_scale).
  double attention_factor = 0.0;
};

// Multi-head latent attention dimensions (DeepSeek-V2/V3).
struct MlaConfig {
  int64_t q_lora_rank = 0;  // 0: config had null, q is projected directly from the hidden state
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
};

enum class ScoringFunc { kSoftmax, kSigmoid };
enum class TopkMethod { kGreedy, kGroupLimitedGreedy, kNoauxTc };
std::string_view scoring_func_name(ScoringFunc f);
std::string_view topk_method_name(TopkMethod m);

// Mixture of experts (DeepSeek, GLM-5, Qwen3-MoE). n_routed_experts == 0 means a dense model.
// Which layers are MoE is decided once at parse time (moe_layers), by the architecture's rule:
// DeepSeek/GLM: layer >= first_k_dense_replace and layer % moe_layer_freq == 0, or the
// config's mlp_layer_types ("dense"/"sparse") when given; Qwen3-MoE: layer not in
// mlp_only_layers and (layer + 1) % decoder_sparse_step == 0.
struct MoeConfig {
  int64_t n_routed_experts = 0;
  int64_t n_shared_experts = 0;
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;
  int64_t first_k_dense_replace = 0;  // layers [0, k) use the dense MLP
  int64_t moe_layer_freq = 1;         // of the remaining layers, every freq-th is MoE
  ScoringFunc scoring_func = ScoringFunc::kSoftmax;
  TopkMethod topk_method = TopkMethod::kGreedy;
  int64_t n_group = 1;
  int64_t topk_group = 1;
  double routed_scaling_factor = 1.0;
  bool norm_topk_prob = false;
  std::vector<bool> moe_layers;  // [num_hidden_layers]
};

// Lightning Indexer of sparse attention (DeepSeek-V3.2, GLM-5). index_n_heads == 0: not sparse.
struct IndexerConfig {
  int64_t index_n_heads = 0;
  int64_t index_head_dim = 0;
  int64_t index_topk = 0;
  // RoPE of the indexer's rope part: rotate-half (V3.2) or pairs (2i, 2i+1) (GLM-5).
  bool interleaved_rope = false;
  // Per layer: true for a "full" layer (own indexer weights and key cache), false for a
  // "shared" one that reuses the previous full layer's top-k (GLM-5). All true for V3.2.
  // From indexer_types, else index_topk_pattern ("F"/"S" or a list), else
  // index_topk_freq / index_skip_topk_offset: layer i is full when
  // max(i - offset + 1, 0) % freq == 0 (freq default 1, offset default 2), as transformers.
  std::vector<bool> full_layers;
};

// quantization_config of an FP8 checkpoint, or of a run with --quantization fp8. Accepted
// (checkpoint tensors decide the scale layout, model/checkpoint.h):
// - quant_method "fp8", fmt "e4m3": weight_block_size [128, 128] (DeepSeek / Qwen), or none
//   (per-tensor, AutoFP8); activation_scheme dynamic or static;
// - "compressed-tensors" (llm-compressor): config groups of 8-bit float weights, strategy
//   tensor, channel or block [128, 128]; `ignore` names and "re:" patterns;
// - "fbgemm_fp8": per-channel weights (Meta's FP8 releases).
// Activations stay bf16 / f32 (W8A16): input scales of static schemes are not read.
struct QuantizationConfig {
  std::string method;  // "" (none), "fp8", "compressed-tensors" or "fbgemm_fp8"
  // weight_block_size (or a compressed-tensors block group); 0 when the scales are per tensor
  // or per channel.
  int64_t block_rows = 128, block_cols = 128;
  bool ue8m0_scales = false;  // scale_fmt "ue8m0": power-of-two scales (DeepSeek-V3.1+)
  // modules_to_not_convert ∪ ignored_layers ∪ compressed-tensors' plain `ignore` names: module
  // names (or dotted suffixes / prefixes of them) whose weights stay unquantized.
  std::vector<std::string> modules_not_converted;
  // compressed-tensors' "re:" `ignore` entries: a module is ignored when one matches from the
  // start of its name (Python's re.match).
  std::vector<ModulePattern> ignore_patterns;

  bool is_fp8() const;  // any of the methods above: FP8 weights
  // Whether the module of `tensor_name` (the name without its last component, e.g.
  // "model.layers.0.mlp.gate_proj" for "...gate_proj.weight") is listed as not converted:
  // an entry matches when it equals a run of whole dot-separated components of the module.
  bool excludes(const std::string& tensor_name) const;
};

struct ModelConfig {
  ModelArch arch = ModelArch::kLlama;
  std::string source;        // where it came from: a file path or "builtin:NAME", for messages
  std::string model_type;    // config "model_type", informational
  bool config_only = false;  // a builtin:config/... entry: for planning, never loaded

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;  // dense MLP (for DeepSeek: the first_k_dense_replace layers)
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // GQA; defaults to num_attention_heads. Unused by MLA.
  // GQA: per-head dim (default hidden_size / num_attention_heads). MLA: the query/key head
  // dim qk_nope_head_dim + qk_rope_head_dim (what the softmax scale is computed from).
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  RopeConfig rope;
  bool tie_word_embeddings = false;

  bool attention_bias = false;  // the config key as given (Llama: bias on q, k, v and o)
  bool qkv_bias = false;        // q/k/v projections have a bias (Qwen2: always)
  bool o_proj_bias = false;     // o_proj has a bias (Llama with attention_bias only)
  bool mlp_bias = false;        // gate/up/down projections have a bias
  bool qk_norm = false;         // Qwen3: RMSNorm over head_dim on every q and k head before RoPE

  int64_t bos_token_id = -1;           // -1: none given
  std::vector<int64_t> eos_token_ids;  // config allows an int or a list; empty: none given
  DType dtype = DType::kF32;           // torch_dtype / dtype; float32 when absent, as in HF
  QuantizationConfig quantization;     // quantization_config (method empty if none)
  // Multi-token-prediction layers after the decoder (DeepSeek/GLM num_nextn_predict_layers,
  // stored as model.layers.{num_hidden_layers + i}); not used for decoding, skipped at load.
  int64_t num_nextn_predict_layers = 0;

  MlaConfig mla;          // meaningful when is_mla()
  MoeConfig moe;          // meaningful when moe.n_routed_experts > 0
  IndexerConfig indexer;  // meaningful when is_sparse()

  bool is_mla() const;
  bool is_sparse() const;
  bool is_moe() const { return moe.n_routed_experts > 0; }
  // Whether layer i (0-based) uses the routed-experts MLP instead of the dense one.
  bool is_moe_layer(int64_t layer) const;
  // Sparse models: whether layer i runs its own indexer (a "full" layer).
  bool has_indexer(int64_t layer) const;
};

// Parses config.json text. `source` names the file in error messages. Throws Error naming
// the source and the field for a missing or mistyped required field, a bad value, or an
// unsupported architecture (listing the supported ones).
ModelConfig parse_model_config(std::string_view json_text, const std::string& source);

// Reads and parses a config.json file. Throws Error naming the path if it cannot be read.
ModelConfig load_model_config(const std::string& path);

// The built-in models (use as "builtin:NAME"): tiny ones for tests and dummy-weight runs
// ("tiny-llama", "tiny-qwen2", "tiny-deepseek-v2", "tiny-deepseek-v3", "tiny-deepseek-v32",
// "tiny-glm5", ...) and config-only copies of real deployments for `ctxpar plan`
// ("config/glm-5", "config/deepseek-v3.2", ...).
std::vector<std::string> builtin_model_names();
bool is_builtin_model(const std::string& model);  // starts with "builtin:"

// --model: "builtin:NAME", a directory holding config.json, or a path to a config.json, with
// vLLM's --hf-overrides (a JSON object whose keys replace config.json's top-level keys; "" or
// "{}": none). Throws Error naming the path (or listing the built-ins) when none of these fits,
// or the flag when the overrides are not a JSON object.
ModelConfig resolve_model_config(const std::string& model, const std::string& hf_overrides = "");

// The longest context the model supports, as vLLM derives its default --max-model-len:
// max_position_embeddings, times the factor under linear RoPE scaling; under YaRN the original
// context times the factor (Qwen3 with YaRN factor 4 over 32768: 131072).
int64_t derived_max_model_len(const ModelConfig& config);

}  // namespace ctxpar::model
