#include "ctxpar/model/builtin_configs.h"

#include <string>
#include <vector>

namespace ctxpar::model {
namespace {

// Shared by all: a byte-level tokenizer (ids 0..255 are bytes, 256.. specials) in a vocab
// of 512, so bos/eos sit in 256..511. Head counts are multiples of 8 so T = 8 works; the
// other sizes are deliberately not powers of two where the layer math allows it.
// tiny-llama: 8 heads over 2 KV heads, so T=8 N=4 and T=4 N=2 shard a replicated KV head,
// while T=2 gives every rank distinct KV heads (N must be 1). Llama-3.1 style rope scaling.
constexpr std::string_view kTinyLlama = R"json({
  "architectures": ["LlamaForCausalLM"],
  "model_type": "llama",
  "vocab_size": 512,
  "hidden_size": 256,
  "intermediate_size": 384,
  "num_hidden_layers": 2,
  "num_attention_heads": 8,
  "num_key_value_heads": 2,
  "head_dim": 32,
  "max_position_embeddings": 4096,
  "rms_norm_eps": 1e-5,
  "rope_theta": 500000.0,
  "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": 512},
  "attention_bias": false,
  "mlp_bias": false,
  "tie_word_embeddings": false,
  "hidden_act": "silu",
  "bos_token_id": 256,
  "eos_token_id": 257,
  "torch_dtype": "float32"
})json";

// tiny-qwen2: q/k/v biases, one KV head (any N dividing T works), head_dim 24 derived from
// hidden / heads, tied embeddings, eos given as a list.
constexpr std::string_view kTinyQwen2 = R"json({
  "architectures": ["Qwen2ForCausalLM"],
  "model_type": "qwen2",
  "vocab_size": 512,
  "hidden_size": 192,
  "intermediate_size": 320,
  "num_hidden_layers": 3,
  "num_attention_heads": 8,
  "num_key_value_heads": 1,
  "max_position_embeddings": 4096,
  "rms_norm_eps": 1e-6,
  "rope_theta": 1000000.0,
  "rope_scaling": null,
  "use_sliding_window": false,
  "tie_word_embeddings": true,
  "hidden_act": "silu",
  "bos_token_id": 256,
  "eos_token_id": [257, 258],
  "torch_dtype": "float32"
})json";

// tiny-deepseek-v2: MLA without q compression (q_lora_rank null), softmax greedy routing over
// 6 experts plus 2 shared ones; layer 0 is dense.
constexpr std::string_view kTinyDeepseekV2 = R"json({
  "architectures": ["DeepseekV2ForCausalLM"],
  "model_type": "deepseek_v2",
  "vocab_size": 512,
  "hidden_size": 160,
  "intermediate_size": 384,
  "moe_intermediate_size": 64,
  "num_hidden_layers": 3,
  "num_attention_heads": 8,
  "num_key_value_heads": 8,
  "q_lora_rank": null,
  "kv_lora_rank": 64,
  "qk_nope_head_dim": 32,
  "qk_rope_head_dim": 16,
  "v_head_dim": 32,
  "n_routed_experts": 6,
  "n_shared_experts": 2,
  "num_experts_per_tok": 2,
  "first_k_dense_replace": 1,
  "moe_layer_freq": 1,
  "scoring_func": "softmax",
  "topk_method": "greedy",
  "n_group": 1,
  "topk_group": 1,
  "routed_scaling_factor": 1.0,
  "norm_topk_prob": false,
  "max_position_embeddings": 4096,
  "rms_norm_eps": 1e-6,
  "rope_theta": 10000.0,
  "rope_scaling": null,
  "attention_bias": false,
  "tie_word_embeddings": false,
  "hidden_act": "silu",
  "bos_token_id": 256,
  "eos_token_id": 257,
  "torch_dtype": "float32"
})json";

// tiny-deepseek-v3: MLA with q compression, YaRN rope scaling, sigmoid noaux_tc routing over
// 8 experts in 4 groups (2 groups kept), one shared expert; layer 0 is dense.
constexpr std::string_view kTinyDeepseekV3Fields = R"json(
  "vocab_size": 512,
  "hidden_size": 192,
  "intermediate_size": 256,
  "moe_intermediate_size": 48,
  "num_hidden_layers": 3,
  "num_attention_heads": 8,
  "num_key_value_heads": 8,
  "q_lora_rank": 96,
  "kv_lora_rank": 64,
  "qk_nope_head_dim": 32,
  "qk_rope_head_dim": 16,
  "v_head_dim": 32,
  "n_routed_experts": 8,
  "n_shared_experts": 1,
  "num_experts_per_tok": 3,
  "first_k_dense_replace": 1,
  "moe_layer_freq": 1,
  "scoring_func": "sigmoid",
  "topk_method": "noaux_tc",
  "n_group": 4,
  "topk_group": 2,
  "routed_scaling_factor": 2.5,
  "norm_topk_prob": true,
  "max_position_embeddings": 4096,
  "rms_norm_eps": 1e-6,
  "rope_theta": 10000.0,
  "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024,
                   "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0},
  "attention_bias": false,
  "tie_word_embeddings": false,
  "hidden_act": "silu",
  "bos_token_id": 256,
  "eos_token_id": 257,
  "torch_dtype": "float32")json";

// Config-only copies of real deployments' config.json (architecture fields only; tokenizer
// and generation fields left out), so `ctxpar plan` answers capacity questions without a
// download. Loading one is refused (ModelConfig::config_only).
constexpr std::string_view kConfigDeepseekV32 = R"json({
  "architectures": ["DeepseekV32ForCausalLM"], "model_type": "deepseek_v32",
  "vocab_size": 129280, "hidden_size": 7168, "intermediate_size": 18432,
  "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_nextn_predict_layers": 1,
  "num_attention_heads": 128, "num_key_value_heads": 128, "q_lora_rank": 1536,
  "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
  "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
  "first_k_dense_replace": 3, "moe_layer_freq": 1, "scoring_func": "sigmoid",
  "topk_method": "noaux_tc", "n_group": 8, "topk_group": 4, "routed_scaling_factor": 2.5,
  "norm_topk_prob": true, "index_n_heads": 64, "index_head_dim": 128, "index_topk": 2048,
  "max_position_embeddings": 163840, "rms_norm_eps": 1e-6, "rope_theta": 10000,
  "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096,
                   "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0},
  "tie_word_embeddings": false, "bos_token_id": 0, "eos_token_id": 1,
  "torch_dtype": "bfloat16",
  "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                          "scale_fmt": "ue8m0", "weight_block_size": [128, 128]}
})json";

// GLM-5 (zai-org/GLM-5): every layer runs its own indexer. GLM-5.2 keeps one full indexer
// layer in four after the first three (index_topk_freq 4, index_skip_topk_offset 3: 21 of 78).
constexpr std::string_view kConfigGlm5Fields = R"json(
  "architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa",
  "vocab_size": 154880, "hidden_size": 6144, "intermediate_size": 12288,
  "moe_intermediate_size": 2048, "num_hidden_layers": 78, "num_nextn_predict_layers": 1,
  "num_attention_heads": 64, "num_key_value_heads": 64, "q_lora_rank": 2048,
  "kv_lora_rank": 512, "qk_nope_head_dim": 192, "qk_rope_head_dim": 64, "v_head_dim": 256,
  "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
  "first_k_dense_replace": 3, "scoring_func": "sigmoid", "topk_method": "noaux_tc",
  "n_group": 1, "topk_group": 1, "routed_scaling_factor": 2.5, "norm_topk_prob": true,
  "index_n_heads": 32, "index_head_dim": 128, "index_topk": 2048,
  "max_position_embeddings": 202752, "rms_norm_eps": 1e-5,
  "rope_parameters": {"rope_type": "default", "rope_theta": 1000000},
  "tie_word_embeddings": false, "dtype": "bfloat16",
  "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                          "weight_block_size": [128, 128],
                          "modules_to_not_convert": ["lm_head", "model.embed_tokens",
                                                     "mlp.gate", "indexer.weights_proj"]})json";

// Kimi-K2 (moonshotai/Kimi-K2-Instruct): DeepSeek-V3 layout with 64 heads, 384 experts and
// one dense layer.
constexpr std::string_view kConfigKimiK2 = R"json({
  "architectures": ["DeepseekV3ForCausalLM"], "model_type": "kimi_k2",
  "vocab_size": 163840, "hidden_size": 7168, "intermediate_size": 18432,
  "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_nextn_predict_layers": 0,
  "num_attention_heads": 64, "num_key_value_heads": 64, "q_lora_rank": 1536,
  "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
  "n_routed_experts": 384, "n_shared_experts": 1, "num_experts_per_tok": 8,
  "first_k_dense_replace": 1, "moe_layer_freq": 1, "scoring_func": "sigmoid",
  "topk_method": "noaux_tc", "n_group": 1, "topk_group": 1, "routed_scaling_factor": 2.827,
  "norm_topk_prob": true, "max_position_embeddings": 131072, "rms_norm_eps": 1e-6,
  "rope_theta": 50000.0,
  "rope_scaling": {"type": "yarn", "factor": 32.0, "original_max_position_embeddings": 4096,
                   "beta_fast": 1.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0},
  "tie_word_embeddings": false, "bos_token_id": 163584, "eos_token_id": 163585,
  "torch_dtype": "bfloat16",
  "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                          "weight_block_size": [128, 128]}
})json";

// Qwen3-235B-A22B: GQA 64 q / 4 kv heads of 128, 128 experts top-8, no shared expert.
constexpr std::string_view kConfigQwen3Moe = R"json({
  "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
  "vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 12288,
  "moe_intermediate_size": 1536, "num_hidden_layers": 94, "num_attention_heads": 64,
  "num_key_value_heads": 4, "head_dim": 128, "num_experts": 128, "num_experts_per_tok": 8,
  "norm_topk_prob": true, "decoder_sparse_step": 1, "mlp_only_layers": [],
  "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
  "rope_scaling": null, "attention_bias": false, "use_sliding_window": false,
  "tie_word_embeddings": false, "bos_token_id": 151643, "eos_token_id": 151645,
  "torch_dtype": "bfloat16"
})json";

// Llama-3.1-70B: GQA 64 q / 8 kv heads of 128, Llama 3.1 rope scaling.
constexpr std::string_view kConfigLlama31_70b = R"json({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "vocab_size": 128256, "hidden_size": 8192, "intermediate_size": 28672,
  "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8,
  "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "rope_theta": 500000.0,
  "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                   "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
  "attention_bias": false, "mlp_bias": false, "tie_word_embeddings": false,
  "bos_token_id": 128000, "eos_token_id": 128001, "torch_dtype": "bfloat16"
})json";

std::vector<BuiltinConfig> make_builtins() {
  const std::string v3_fields(kTinyDeepseekV3Fields);
  return {
      {"tiny-llama", std::string(kTinyLlama)},
      {"tiny-qwen2", std::string(kTinyQwen2)},
      {"tiny-deepseek-v2", std::string(kTinyDeepseekV2)},
      {"tiny-deepseek-v3", R"json({
  "architectures": ["DeepseekV3ForCausalLM"],
  "model_type": "deepseek_v3",)json" +
                               v3_fields + "\n}"},
      // tiny-deepseek-v32: tiny-deepseek-v3 plus a Lightning Indexer (4 heads of 32, top-16).
      {"tiny-deepseek-v32", R"json({
  "architectures": ["DeepseekV32ForCausalLM"],
  "model_type": "deepseek_v32",
  "index_n_heads": 4,
  "index_head_dim": 32,
  "index_topk": 16,)json" + v3_fields +
                                "\n}"},
      // tiny-glm5: the same sizes as GLM-5 (GlmMoeDsaForCausalLM): pair RoPE in the indexer, layers
      // full, shared, full (index_topk_freq 2, index_skip_topk_offset 1), 8 indexer heads.
      {"tiny-glm5", R"json({
  "architectures": ["GlmMoeDsaForCausalLM"],
  "model_type": "glm_moe_dsa",
  "index_n_heads": 8,
  "index_head_dim": 32,
  "index_topk": 16,
  "index_topk_freq": 2,
  "index_skip_topk_offset": 1,)json" +
                        v3_fields + "\n}"},
      {"config/deepseek-v3.2", std::string(kConfigDeepseekV32), true},
      {"config/glm-5", "{" + std::string(kConfigGlm5Fields) + "\n}", true},
      {"config/glm-5.2",
       "{" + std::string(kConfigGlm5Fields) +
           R"json(,
  "index_topk_freq": 4, "index_skip_topk_offset": 3
})json",
       true},
      {"config/kimi-k2", std::string(kConfigKimiK2), true},
      {"config/qwen3-235b-a22b", std::string(kConfigQwen3Moe), true},
      {"config/llama-3.1-70b", std::string(kConfigLlama31_70b), true},
  };
}

}  // namespace

std::span<const BuiltinConfig> builtin_configs() {
  static const std::vector<BuiltinConfig> builtins = make_builtins();
  return builtins;
}

}  // namespace ctxpar::model
