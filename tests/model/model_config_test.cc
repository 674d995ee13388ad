#include "ctxpar/model/model_config.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include <random>
#include <string>

#include "ctxpar/core/error.h"
#include "ctxpar/kernels/rope.h"
#include "ctxpar/model/layers/attention_layers.h"
#include "model/test_util.h"

namespace ctxpar::model {
namespace {

using nlohmann::json;
using testing::uniform_int;

// The message of the Error that fn throws ("" and a test failure if it throws none).
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ctxpar::Error";
  return "";
}

ModelConfig parse(const json& j, const std::string& source = "test/config.json") {
  return parse_model_config(j.dump(2), source);
}

// Random but consistent GQA sizes, as real configs would give them.
struct GqaSizes {
  int64_t heads, kv_heads, head_dim, hidden, intermediate, layers, vocab;
};
GqaSizes random_gqa(std::mt19937_64& rng) {
  GqaSizes s;
  s.kv_heads = uniform_int(rng, 1, 6);
  s.heads = s.kv_heads * uniform_int(rng, 1, 7);
  s.head_dim = 2 * uniform_int(rng, 4, 40);
  s.hidden = s.heads * s.head_dim;
  s.intermediate = uniform_int(rng, 1, 999);
  s.layers = uniform_int(rng, 1, 61);
  s.vocab = uniform_int(rng, 300, 200000);
  return s;
}

json llama_json(const GqaSizes& s) {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"vocab_size", s.vocab},
          {"hidden_size", s.hidden},
          {"intermediate_size", s.intermediate},
          {"num_hidden_layers", s.layers},
          {"num_attention_heads", s.heads},
          {"num_key_value_heads", s.kv_heads},
          {"max_position_embeddings", 131072},
          {"rms_norm_eps", 1e-5},
          {"rope_theta", 500000.0},
          {"rope_scaling",
           {{"factor", 8.0},
            {"low_freq_factor", 1.0},
            {"high_freq_factor", 4.0},
            {"original_max_position_embeddings", 8192},
            {"rope_type", "llama3"}}},
          {"attention_bias", false},
          {"mlp_bias", false},
          {"tie_word_embeddings", false},
          {"hidden_act", "silu"},
          {"bos_token_id", 1},
          {"eos_token_id", {2, 7, 9}},
          {"torch_dtype", "bfloat16"}};
}

json deepseek_v2_json() {
  return json::parse(R"({
    "architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2",
    "vocab_size": 102400, "hidden_size": 2048, "intermediate_size": 10944,
    "moe_intermediate_size": 1408, "num_hidden_layers": 27, "num_attention_heads": 16,
    "num_key_value_heads": 16, "q_lora_rank": null, "kv_lora_rank": 512,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
    "first_k_dense_replace": 1, "moe_layer_freq": 1, "scoring_func": "softmax",
    "topk_method": "greedy", "n_group": 1, "topk_group": 1, "routed_scaling_factor": 1.0,
    "norm_topk_prob": false, "max_position_embeddings": 163840, "rms_norm_eps": 1e-6,
    "rope_theta": 10000,
    "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 0.707,
                     "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096,
                     "type": "yarn"},
    "attention_bias": false, "tie_word_embeddings": false, "bos_token_id": 100000,
    "eos_token_id": 100001, "torch_dtype": "bfloat16"})");
}

// V3 written the newer way: rope_parameters carrying rope_type and rope_theta, and "dtype".
json deepseek_v3_json() {
  return json::parse(R"({
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
    "vocab_size": 129280, "hidden_size": 7168, "intermediate_size": 18432,
    "moe_intermediate_size": 2048, "num_hidden_layers": 61, "num_attention_heads": 128,
    "num_key_value_heads": 128, "q_lora_rank": 1536, "kv_lora_rank": 512,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
    "n_routed_experts": 256, "n_shared_experts": 1, "num_experts_per_tok": 8,
    "first_k_dense_replace": 3, "moe_layer_freq": 1, "scoring_func": "sigmoid",
    "topk_method": "noaux_tc", "n_group": 8, "topk_group": 4, "routed_scaling_factor": 2.5,
    "norm_topk_prob": true, "max_position_embeddings": 163840, "rms_norm_eps": 1e-6,
    "rope_parameters": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40,
                        "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0,
                        "original_max_position_embeddings": 4096},
    "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]},
    "bos_token_id": 0, "eos_token_id": 1, "dtype": "bfloat16"})");
}

json deepseek_v32_json() {
  json j = deepseek_v3_json();
  j["architectures"] = {"DeepseekV32ForCausalLM"};
  j["model_type"] = "deepseek_v32";
  j["index_n_heads"] = 64;
  j["index_head_dim"] = 128;
  j["index_topk"] = 2048;
  return j;
}

TEST(ModelConfig, LlamaWithLlama3RopeScalingAndEosList) {
  CTXPAR_SEEDED_RNG(rng);
  for (int trial = 0; trial < 20; ++trial) {
    const GqaSizes s = random_gqa(rng);
    const ModelConfig c = parse(llama_json(s));
    EXPECT_EQ(c.arch, ModelArch::kLlama);
    EXPECT_EQ(c.source, "test/config.json");
    EXPECT_EQ(c.vocab_size, s.vocab);
    EXPECT_EQ(c.hidden_size, s.hidden);
    EXPECT_EQ(c.intermediate_size, s.intermediate);
    EXPECT_EQ(c.num_hidden_layers, s.layers);
    EXPECT_EQ(c.num_attention_heads, s.heads);
    EXPECT_EQ(c.num_key_value_heads, s.kv_heads);
    EXPECT_EQ(c.head_dim, s.head_dim);  // derived: hidden / heads
    EXPECT_EQ(c.rope.type, RopeType::kLlama3);
    EXPECT_DOUBLE_EQ(c.rope.theta, 500000.0);
    EXPECT_DOUBLE_EQ(c.rope.factor, 8.0);
    EXPECT_DOUBLE_EQ(c.rope.low_freq_factor, 1.0);
    EXPECT_DOUBLE_EQ(c.rope.high_freq_factor, 4.0);
    EXPECT_EQ(c.rope.original_max_position_embeddings, 8192);
    EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
    EXPECT_EQ(c.bos_token_id, 1);
    EXPECT_EQ(c.eos_token_ids, (std::vector<int64_t>{2, 7, 9}));
    EXPECT_EQ(c.dtype, DType::kBF16);
    EXPECT_FALSE(c.qkv_bias);
    EXPECT_FALSE(c.is_mla());
    EXPECT_FALSE(c.is_moe());
    EXPECT_FALSE(c.is_sparse());
    for (int64_t l = 0; l < s.layers; ++l) EXPECT_FALSE(c.is_moe_layer(l));
  }
}

TEST(ModelConfig, LlamaAttentionBiasCoversQkvAndOutput) {
  CTXPAR_SEEDED_RNG(rng);
  json j = llama_json(random_gqa(rng));
  j["attention_bias"] = true;
  j["mlp_bias"] = true;
  const ModelConfig c = parse(j);
  EXPECT_TRUE(c.attention_bias);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_TRUE(c.o_proj_bias);
  EXPECT_TRUE(c.mlp_bias);
}

TEST(ModelConfig, ExplicitHeadDimOverridesHiddenOverHeads) {
  CTXPAR_SEEDED_RNG(rng);
  GqaSizes s = random_gqa(rng);
  json j = llama_json(s);
  const int64_t head_dim = 2 * uniform_int(rng, 3, 100);
  j["head_dim"] = head_dim;
  j["hidden_size"] = s.hidden + 2 * uniform_int(rng, 1, 10) + 1;  // no longer heads·head_dim
  EXPECT_EQ(parse(j).head_dim, head_dim);
  j.erase("head_dim");
  j["hidden_size"] = s.heads * 7 + (s.heads > 1 ? 1 : 0);
  if (s.heads > 1) {
    const std::string msg = error_of([&] { parse(j); });
    EXPECT_NE(msg.find("head_dim"), std::string::npos) << msg;
  }
}

TEST(ModelConfig, Qwen2AlwaysHasQkvBiasAndDefaults) {
  CTXPAR_SEEDED_RNG(rng);
  GqaSizes s = random_gqa(rng);
  json j = llama_json(s);
  j["architectures"] = {"Qwen2ForCausalLM"};
  j["model_type"] = "qwen2";
  j.erase("attention_bias");       // Qwen2 configs do not carry it
  j.erase("num_key_value_heads");  // defaults to num_attention_heads
  j.erase("rope_theta");           // defaults to 10000
  j["rope_scaling"] = nullptr;     // null means no scaling
  j.erase("torch_dtype");          // float32 when absent
  j["eos_token_id"] = 151645;      // a single id
  j["vocab_size"] = 151936;
  j["tie_word_embeddings"] = true;
  j["use_sliding_window"] = false;
  const ModelConfig c = parse(j);
  EXPECT_EQ(c.arch, ModelArch::kQwen2);
  EXPECT_TRUE(c.qkv_bias);
  EXPECT_FALSE(c.o_proj_bias);
  EXPECT_EQ(c.num_key_value_heads, s.heads);
  EXPECT_EQ(c.rope.type, RopeType::kDefault);
  EXPECT_DOUBLE_EQ(c.rope.theta, 10000.0);
  EXPECT_EQ(c.dtype, DType::kF32);
  EXPECT_EQ(c.eos_token_ids, std::vector<int64_t>{151645});
  EXPECT_TRUE(c.tie_word_embeddings);

  j["use_sliding_window"] = true;
  const std::string msg = error_of([&] { parse(j); });
  EXPECT_NE(msg.find("use_sliding_window"), std::string::npos) << msg;
}

TEST(ModelConfig, DeepseekV2NullQLoraRankYarnByTypeKeyAndMoeLayers) {
  const ModelConfig c = parse(deepseek_v2_json());
  EXPECT_EQ(c.arch, ModelArch::kDeepseekV2);
  EXPECT_TRUE(c.is_mla());
  EXPECT_FALSE(c.is_sparse());
  EXPECT_EQ(c.mla.q_lora_rank, 0);
  EXPECT_EQ(c.mla.kv_lora_rank, 512);
  EXPECT_EQ(c.mla.qk_nope_head_dim, 128);
  EXPECT_EQ(c.mla.qk_rope_head_dim, 64);
  EXPECT_EQ(c.mla.v_head_dim, 128);
  EXPECT_EQ(c.head_dim, 192);
  EXPECT_EQ(c.rope.type, RopeType::kYarn);
  EXPECT_DOUBLE_EQ(c.rope.factor, 40);
  EXPECT_DOUBLE_EQ(c.rope.mscale, 0.707);
  EXPECT_DOUBLE_EQ(c.rope.mscale_all_dim, 0.707);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 4096);
  EXPECT_TRUE(c.is_moe());
  EXPECT_EQ(c.moe.n_routed_experts, 64);
  EXPECT_EQ(c.moe.n_shared_experts, 2);
  EXPECT_EQ(c.moe.num_experts_per_tok, 6);
  EXPECT_EQ(c.moe.moe_intermediate_size, 1408);
  EXPECT_EQ(c.moe.scoring_func, ScoringFunc::kSoftmax);
  EXPECT_EQ(c.moe.topk_method, TopkMethod::kGreedy);
  EXPECT_FALSE(c.moe.norm_topk_prob);
  EXPECT_FALSE(c.is_moe_layer(0));
  for (int64_t l = 1; l < 27; ++l) EXPECT_TRUE(c.is_moe_layer(l)) << l;
  EXPECT_THROW(c.is_moe_layer(27), Error);
}

TEST(ModelConfig, MoeLayerPatternFollowsFirstKDenseAndFrequency) {
  CTXPAR_SEEDED_RNG(rng);
  for (int trial = 0; trial < 20; ++trial) {
    json j = deepseek_v2_json();
    const int64_t layers = uniform_int(rng, 1, 40), k = uniform_int(rng, 0, 5);
    const int64_t freq = uniform_int(rng, 1, 3);
    j["num_hidden_layers"] = layers;
    j["first_k_dense_replace"] = k;
    j["moe_layer_freq"] = freq;
    const ModelConfig c = parse(j);
    for (int64_t l = 0; l < layers; ++l) {
      EXPECT_EQ(c.is_moe_layer(l), l >= k && l % freq == 0) << "layer " << l;
    }
  }
  // n_routed_experts null: a dense DeepSeek model.
  json j = deepseek_v2_json();
  j["n_routed_experts"] = nullptr;
  const ModelConfig dense = parse(j);
  EXPECT_FALSE(dense.is_moe());
  for (int64_t l = 0; l < dense.num_hidden_layers; ++l) EXPECT_FALSE(dense.is_moe_layer(l));
}

TEST(ModelConfig, DeepseekV3RopeParametersCarryThetaAndYarn) {
  const ModelConfig c = parse(deepseek_v3_json());
  EXPECT_EQ(c.arch, ModelArch::kDeepseekV3);
  EXPECT_EQ(c.mla.q_lora_rank, 1536);
  EXPECT_EQ(c.rope.type, RopeType::kYarn);
  EXPECT_DOUBLE_EQ(c.rope.theta, 10000.0);
  EXPECT_DOUBLE_EQ(c.rope.factor, 40);
  EXPECT_DOUBLE_EQ(c.rope.beta_fast, 32);
  EXPECT_DOUBLE_EQ(c.rope.beta_slow, 1);
  EXPECT_DOUBLE_EQ(c.rope.mscale_all_dim, 1.0);
  EXPECT_EQ(c.moe.scoring_func, ScoringFunc::kSigmoid);
  EXPECT_EQ(c.moe.topk_method, TopkMethod::kNoauxTc);
  EXPECT_EQ(c.moe.n_group, 8);
  EXPECT_EQ(c.moe.topk_group, 4);
  EXPECT_DOUBLE_EQ(c.moe.routed_scaling_factor, 2.5);
  EXPECT_TRUE(c.moe.norm_topk_prob);
  EXPECT_EQ(c.dtype, DType::kBF16);
  EXPECT_TRUE(c.quantization.is_fp8());
  EXPECT_EQ(c.quantization.block_rows, 128);
  EXPECT_FALSE(c.is_moe_layer(2));
  EXPECT_TRUE(c.is_moe_layer(3));

  // rope_theta at the top level and inside rope_parameters: the inner one wins, being the
  // newer spelling; yarn without original_max_position_embeddings uses the model's maximum.
  json j = deepseek_v3_json();
  j["rope_theta"] = 1234.0;
  j["rope_parameters"]["rope_theta"] = 50000.0;
  j["rope_parameters"].erase("original_max_position_embeddings");
  const ModelConfig d = parse(j);
  EXPECT_DOUBLE_EQ(d.rope.theta, 50000.0);
  EXPECT_EQ(d.rope.original_max_position_embeddings, 163840);
  // A default-type rope_parameters only carries theta.
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 77.0}};
  const ModelConfig e = parse(j);
  EXPECT_EQ(e.rope.type, RopeType::kDefault);
  EXPECT_DOUBLE_EQ(e.rope.theta, 77.0);
  // linear needs a factor.
  j["rope_parameters"] = {{"rope_type", "linear"}, {"factor", 2.5}};
  EXPECT_DOUBLE_EQ(parse(j).rope.factor, 2.5);
}

TEST(ModelConfig, DeepseekV32HasIndexer) {
  const ModelConfig c = parse(deepseek_v32_json());
  EXPECT_EQ(c.arch, ModelArch::kDeepseekV32);
  EXPECT_TRUE(c.is_sparse());
  EXPECT_TRUE(c.is_mla());
  EXPECT_EQ(c.indexer.index_n_heads, 64);
  EXPECT_EQ(c.indexer.index_head_dim, 128);
  EXPECT_EQ(c.indexer.index_topk, 2048);
}

TEST(ModelConfig, MissingRequiredFieldNamesTheFieldAndFile) {
  CTXPAR_SEEDED_RNG(rng);
  const std::vector<std::pair<json, std::vector<std::string>>> cases = {
      {llama_json(random_gqa(rng)),
       {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
        "num_attention_heads", "max_position_embeddings"}},
      {deepseek_v2_json(),
       {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "num_experts_per_tok",
        "moe_intermediate_size"}},
      {deepseek_v32_json(), {"index_n_heads", "index_head_dim", "index_topk"}},
  };
  for (const auto& [base, fields] : cases) {
    for (const std::string& field : fields) {
      for (bool as_null : {false, true}) {
        json j = base;
        if (as_null) {
          j[field] = nullptr;
        } else {
          j.erase(field);
        }
        const std::string msg = error_of([&] { parse(j, "models/x/config.json"); });
        EXPECT_NE(msg.find("'" + field + "'"), std::string::npos) << msg;
        EXPECT_NE(msg.find("models/x/config.json"), std::string::npos) << msg;
      }
    }
  }
  // llama3 rope scaling without one of its parameters.
  for (const char* key :
       {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"}) {
    json j = llama_json(random_gqa(rng));
    j["rope_scaling"].erase(key);
    const std::string msg = error_of([&] { parse(j); });
    EXPECT_NE(msg.find(std::string("rope_scaling.") + key), std::string::npos) << msg;
  }
}

TEST(ModelConfig, UnknownArchitectureListsTheSupportedOnes) {
  CTXPAR_SEEDED_RNG(rng);
  json j = llama_json(random_gqa(rng));
  j["architectures"] = {"MistralForCausalLM"};
  std::string msg = error_of([&] { parse(j, "m/config.json"); });
  EXPECT_NE(msg.find("MistralForCausalLM"), std::string::npos) << msg;
  EXPECT_NE(msg.find("m/config.json"), std::string::npos) << msg;
  for (const char* arch : {"LlamaForCausalLM", "Qwen2ForCausalLM", "DeepseekV2ForCausalLM",
                           "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM"}) {
    EXPECT_NE(msg.find(arch), std::string::npos) << msg;
  }
  j.erase("architectures");
  msg = error_of([&] { parse(j); });
  EXPECT_NE(msg.find("architectures"), std::string::npos) << msg;
  j["architectures"] = json::array();
  EXPECT_THROW(parse(j), Error);
}

TEST(ModelConfig, BadValuesAreRejectedByName) {
  CTXPAR_SEEDED_RNG(rng);
  const json base = llama_json(random_gqa(rng));
  struct Case {
    const char* field;
    json value;
  };
  const std::vector<Case> cases = {
      {"hidden_size", "4096"},
      {"hidden_size", 4096.5},
      {"num_hidden_layers", 0},
      {"vocab_size", -5},
      {"vocab_size", 18446744073709551615ull},
      {"rms_norm_eps", "small"},
      {"rms_norm_eps", 0},
      {"tie_word_embeddings", 1},
      {"eos_token_id", "eos"},
      {"eos_token_id", json::array({1, -2})},
      {"bos_token_id", 1 << 30},
      {"torch_dtype", "float8"},
      {"hidden_act", "gelu"},
      {"rope_scaling", json{{"type", "dynamic"}, {"factor", 2.0}}},
      {"rope_scaling", json{{"rope_type", "yarn"}}},
      {"rope_scaling", "yarn"},
      {"num_key_value_heads", 1000003},
  };
  for (const Case& c : cases) {
    json j = base;
    j[c.field] = c.value;
    const std::string msg = error_of([&] { parse(j); });
    EXPECT_NE(msg.find(c.field), std::string::npos) << c.field << " = " << c.value << ": " << msg;
  }
  EXPECT_THROW(parse_model_config("{\"architectures\": [", "x.json"), Error);
  EXPECT_THROW(parse_model_config("[1, 2]", "x.json"), Error);

  json v3 = deepseek_v3_json();
  v3["topk_method"] = "random";
  EXPECT_NE(error_of([&] { parse(v3); }).find("topk_method"), std::string::npos);
  v3 = deepseek_v3_json();
  v3["scoring_func"] = "tanh";
  EXPECT_NE(error_of([&] { parse(v3); }).find("scoring_func"), std::string::npos);
  v3 = deepseek_v3_json();
  v3["n_group"] = 7;  // does not divide 256 experts
  EXPECT_NE(error_of([&] { parse(v3); }).find("n_group"), std::string::npos);
}

TEST(ModelConfig, BuiltinsParseAndFitTheirPurpose) {
  const std::vector<std::string> names = builtin_model_names();
  ASSERT_EQ(names.size(), 12u);
  int tiny = 0;
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const ModelConfig c = resolve_model_config("builtin:" + name);
    EXPECT_EQ(c.config_only, name.rfind("config/", 0) == 0);
    if (c.config_only) continue;
    ++tiny;
    EXPECT_EQ(c.source, "builtin:" + name);
    EXPECT_EQ(c.vocab_size, 512);
    EXPECT_GE(c.num_hidden_layers, 2);
    EXPECT_LE(c.num_hidden_layers, 4);
    EXPECT_LE(c.hidden_size, 256);
    EXPECT_EQ(c.num_attention_heads % 8, 0);
    EXPECT_GE(c.bos_token_id, 256);
    EXPECT_LT(c.bos_token_id, 512);
    ASSERT_FALSE(c.eos_token_ids.empty());
    for (int64_t id : c.eos_token_ids) {
      EXPECT_GE(id, 256);
      EXPECT_LT(id, 512);
    }
  }
  const ModelConfig llama = resolve_model_config("builtin:tiny-llama");
  EXPECT_EQ(llama.arch, ModelArch::kLlama);
  EXPECT_EQ(llama.num_attention_heads, 8);
  EXPECT_EQ(llama.num_key_value_heads, 2);
  EXPECT_EQ(llama.head_dim, 32);

  const ModelConfig qwen = resolve_model_config("builtin:tiny-qwen2");
  EXPECT_EQ(qwen.arch, ModelArch::kQwen2);
  EXPECT_TRUE(qwen.qkv_bias);
  EXPECT_EQ(qwen.num_key_value_heads, 1);

  const ModelConfig v2 = resolve_model_config("builtin:tiny-deepseek-v2");
  EXPECT_EQ(v2.arch, ModelArch::kDeepseekV2);
  EXPECT_EQ(v2.mla.q_lora_rank, 0);
  EXPECT_GT(v2.moe.n_shared_experts, 0);
  EXPECT_EQ(v2.moe.scoring_func, ScoringFunc::kSoftmax);
  EXPECT_EQ(v2.moe.topk_method, TopkMethod::kGreedy);
  EXPECT_FALSE(v2.is_moe_layer(0));
  EXPECT_TRUE(v2.is_moe_layer(1));

  const ModelConfig v3 = resolve_model_config("builtin:tiny-deepseek-v3");
  EXPECT_EQ(v3.arch, ModelArch::kDeepseekV3);
  EXPECT_GT(v3.mla.q_lora_rank, 0);
  EXPECT_EQ(v3.rope.type, RopeType::kYarn);
  EXPECT_EQ(v3.moe.scoring_func, ScoringFunc::kSigmoid);
  EXPECT_EQ(v3.moe.topk_method, TopkMethod::kNoauxTc);
  EXPECT_GT(v3.moe.n_group, 1);
  EXPECT_FALSE(v3.is_sparse());

  const ModelConfig v32 = resolve_model_config("builtin:tiny-deepseek-v32");
  EXPECT_EQ(v32.arch, ModelArch::kDeepseekV32);
  EXPECT_TRUE(v32.is_sparse());
  EXPECT_EQ(v32.indexer.index_n_heads, 4);
  EXPECT_EQ(v32.indexer.index_head_dim, 32);
  EXPECT_EQ(v32.indexer.index_topk, 16);
  EXPECT_EQ(v32.mla.kv_lora_rank, v3.mla.kv_lora_rank);  // V3.2 is V3 plus the indexer
  EXPECT_FALSE(v32.indexer.interleaved_rope);
  EXPECT_EQ(tiny, 6);

  const ModelConfig glm = resolve_model_config("builtin:tiny-glm5");
  EXPECT_EQ(glm.arch, ModelArch::kGlmMoeDsa);
  EXPECT_TRUE(glm.is_sparse() && glm.is_mla());
  EXPECT_TRUE(glm.indexer.interleaved_rope);
  EXPECT_EQ(glm.indexer.full_layers, (std::vector<bool>{true, false, true}));
  EXPECT_FALSE(glm.has_indexer(1));
}

// The config-only entries carry the real deployments' sizes.
TEST(ModelConfig, ConfigOnlyBuiltinsHoldTheRealSizes) {
  const ModelConfig glm5 = resolve_model_config("builtin:config/glm-5");
  EXPECT_EQ(glm5.hidden_size, 6144);
  EXPECT_EQ(glm5.num_hidden_layers, 78);
  EXPECT_EQ(glm5.mla.kv_lora_rank + glm5.mla.qk_rope_head_dim, 576);
  EXPECT_EQ(glm5.indexer.index_head_dim, 128);
  EXPECT_EQ(std::count(glm5.indexer.full_layers.begin(), glm5.indexer.full_layers.end(), true), 78);
  EXPECT_EQ(glm5.num_nextn_predict_layers, 1);
  EXPECT_TRUE(glm5.quantization.is_fp8());
  EXPECT_TRUE(glm5.quantization.excludes("model.layers.5.self_attn.indexer.weights_proj.weight"));
  EXPECT_FALSE(glm5.quantization.excludes("model.layers.5.self_attn.indexer.wk.weight"));
  EXPECT_TRUE(glm5.quantization.excludes("model.layers.5.mlp.gate.weight"));
  EXPECT_FALSE(glm5.quantization.excludes("model.layers.5.mlp.gate_proj.weight"));
  // GLM-5.2: layers 0, 1, 2 full, then every fourth (6, 10, ..., 74): 21 of 78.
  const ModelConfig glm52 = resolve_model_config("builtin:config/glm-5.2");
  std::vector<int64_t> full;
  for (int64_t l = 0; l < glm52.num_hidden_layers; ++l) {
    if (glm52.has_indexer(l)) full.push_back(l);
  }
  ASSERT_EQ(full.size(), 21u);
  EXPECT_EQ(full[3], 6);
  EXPECT_EQ(full.back(), 74);
  const ModelConfig v32 = resolve_model_config("builtin:config/deepseek-v3.2");
  EXPECT_EQ(v32.indexer.index_n_heads, 64);
  EXPECT_TRUE(v32.quantization.ue8m0_scales);
  const ModelConfig kimi = resolve_model_config("builtin:config/kimi-k2");
  EXPECT_EQ(kimi.moe.n_routed_experts, 384);
  EXPECT_EQ(kimi.rope.beta_fast, kimi.rope.beta_slow);
  const ModelConfig qwen = resolve_model_config("builtin:config/qwen3-235b-a22b");
  EXPECT_EQ(qwen.arch, ModelArch::kQwen3Moe);
  EXPECT_EQ(qwen.moe.n_routed_experts, 128);
  EXPECT_TRUE(qwen.is_moe_layer(0) && qwen.is_moe_layer(93));
  const ModelConfig llama = resolve_model_config("builtin:config/llama-3.1-70b");
  EXPECT_EQ(llama.num_key_value_heads, 8);
  EXPECT_EQ(llama.rope.type, RopeType::kLlama3);
}

TEST(ModelConfig, ResolveFromBuiltinDirectoryOrFile) {
  testing::TempDir dir;
  CTXPAR_SEEDED_RNG(rng);
  const GqaSizes s = random_gqa(rng);
  testing::write_text(dir.file("config.json"), llama_json(s).dump());

  EXPECT_EQ(resolve_model_config(dir.path().string()).hidden_size, s.hidden);
  const ModelConfig from_file = resolve_model_config(dir.file("config.json"));
  EXPECT_EQ(from_file.hidden_size, s.hidden);
  EXPECT_EQ(from_file.source, dir.file("config.json"));

  std::string msg = error_of([] { resolve_model_config("builtin:tiny-gpt"); });
  EXPECT_NE(msg.find("builtin:tiny-gpt"), std::string::npos) << msg;
  for (const std::string& name : builtin_model_names()) {
    EXPECT_NE(msg.find("builtin:" + name), std::string::npos) << msg;
  }

  testing::TempDir empty;
  msg = error_of([&] { resolve_model_config(empty.path().string()); });
  EXPECT_NE(msg.find("config.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find(empty.path().string()), std::string::npos) << msg;

  msg = error_of([&] { resolve_model_config(dir.file("nope")); });
  EXPECT_NE(msg.find(dir.file("nope")), std::string::npos) << msg;

  testing::write_text(dir.file("config.json"), "{ not json");
  msg = error_of([&] { resolve_model_config(dir.path().string()); });
  EXPECT_NE(msg.find(dir.file("config.json")), std::string::npos) << msg;
}

}  // namespace
}  // namespace ctxpar::model

namespace ctxpar::model {
namespace {

using nlohmann::json;

json glm5_json() {
  json j = json::parse(R"({
    "architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa",
    "vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128,
    "moe_intermediate_size": 32, "num_hidden_layers": 6, "num_attention_heads": 4,
    "q_lora_rank": 48, "kv_lora_rank": 32, "qk_nope_head_dim": 16, "qk_rope_head_dim": 8,
    "v_head_dim": 24, "n_routed_experts": 4, "num_experts_per_tok": 2,
    "first_k_dense_replace": 1, "index_n_heads": 4, "index_head_dim": 16, "index_topk": 8,
    "max_position_embeddings": 256})");
  return j;
}

ModelConfig parse_glm(const json& j) {
  return parse_model_config(j.dump(), "glm.json");
}

std::string error_of_glm(const json& j) {
  try {
    parse_glm(j);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelConfig, Glm5IndexerLayersFollowTransformersRules) {
  json j = glm5_json();
  // Defaults: freq 1 → every layer full; routing sigmoid / noaux_tc like transformers' router.
  ModelConfig c = parse_glm(j);
  EXPECT_EQ(c.indexer.full_layers, std::vector<bool>(6, true));
  EXPECT_TRUE(c.indexer.interleaved_rope);
  EXPECT_EQ(c.moe.scoring_func, ScoringFunc::kSigmoid);
  EXPECT_EQ(c.moe.topk_method, TopkMethod::kNoauxTc);
  // freq 3, offset 2: full when max(i - 1, 0) % 3 == 0 → layers 0, 1, 4.
  j["index_topk_freq"] = 3;
  j["index_skip_topk_offset"] = 2;
  c = parse_glm(j);
  EXPECT_EQ(c.indexer.full_layers, (std::vector<bool>{true, true, false, false, true, false}));
  // A pattern string wins over freq / offset, indexer_types over both.
  j["index_topk_pattern"] = "FSFFSS";
  EXPECT_EQ(parse_glm(j).indexer.full_layers,
            (std::vector<bool>{true, false, true, true, false, false}));
  j["indexer_types"] = {"full", "full", "shared", "full", "shared", "shared"};
  EXPECT_EQ(parse_glm(j).indexer.full_layers,
            (std::vector<bool>{true, true, false, true, false, false}));
}

TEST(ModelConfig, Glm5BadIndexerPatternsNameTheFieldAndTheRule) {
  json j = glm5_json();
  j["indexer_types"] = {"shared", "full", "full", "full", "full", "full"};
  std::string msg = error_of_glm(j);
  EXPECT_NE(msg.find("indexer_types"), std::string::npos) << msg;
  EXPECT_NE(msg.find("layer 0 must be \"full\""), std::string::npos) << msg;
  j = glm5_json();
  j["index_topk_pattern"] = "FSX";
  msg = error_of_glm(j);
  EXPECT_NE(msg.find("index_topk_pattern"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'S'"), std::string::npos) << msg;
  j["index_topk_pattern"] = "FSF";  // 3 entries for 6 layers
  msg = error_of_glm(j);
  EXPECT_NE(msg.find("num_hidden_layers = 6"), std::string::npos) << msg;
  j = glm5_json();
  j["indexer_types"] = {"full", "sometimes", "full", "full", "full", "full"};
  msg = error_of_glm(j);
  EXPECT_NE(msg.find("'sometimes'"), std::string::npos) << msg;
  j = glm5_json();
  j["index_topk_freq"] = "4";  // a field of the wrong type
  msg = error_of_glm(j);
  EXPECT_NE(msg.find("index_topk_freq"), std::string::npos) << msg;
  EXPECT_NE(msg.find("integer"), std::string::npos) << msg;
  j = glm5_json();
  j["indexer_types"] = "full";
  msg = error_of_glm(j);
  EXPECT_NE(msg.find("list of strings"), std::string::npos) << msg;
}

TEST(ModelConfig, Fp8QuantizationConfigIsCheckedByField) {
  json j = glm5_json();
  j["quantization_config"] = {{"quant_method", "fp8"},
                              {"fmt", "e4m3"},
                              {"weight_block_size", {128, 128}},
                              {"modules_to_not_convert", {"lm_head", "indexer.weights_proj"}},
                              {"ignored_layers", {"model.layers.0.self_attn.q_a_proj"}}};
  const ModelConfig c = parse_glm(j);
  EXPECT_TRUE(c.quantization.is_fp8());
  EXPECT_TRUE(c.quantization.excludes("lm_head.weight"));
  EXPECT_TRUE(c.quantization.excludes("model.layers.0.self_attn.q_a_proj.weight"));
  EXPECT_FALSE(c.quantization.excludes("model.layers.1.self_attn.q_a_proj.weight"));
  EXPECT_FALSE(c.quantization.excludes("model.layers.10.self_attn.q_a_proj.weight"));
  const auto with = [&](const char* key, const json& value) {
    json k = j;
    k["quantization_config"][key] = value;
    return error_of_glm(k);
  };
  std::string msg = with("weight_block_size", {64, 64});
  EXPECT_NE(msg.find("weight_block_size"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[128, 128]"), std::string::npos) << msg;
  msg = with("fmt", "e5m2");
  EXPECT_NE(msg.find("'e5m2'"), std::string::npos) << msg;
  msg = with("quant_method", "gptq");
  EXPECT_NE(msg.find("'gptq'"), std::string::npos) << msg;
  msg = with("modules_to_not_convert", "lm_head");
  EXPECT_NE(msg.find("modules_to_not_convert"), std::string::npos) << msg;
  msg = with("scale_fmt", "e8m0x");
  EXPECT_NE(msg.find("scale_fmt"), std::string::npos) << msg;
}

// Per-tensor FP8 (no weight_block_size, AutoFP8 with static activation scales), fbgemm_fp8 and
// compressed-tensors FP8 configs, with compressed-tensors' `ignore` names and "re:" patterns.
TEST(ModelConfig, PerTensorFbgemmAndCompressedTensorsFp8Configs) {
  json j = glm5_json();
  j["quantization_config"] = {
      {"quant_method", "fp8"}, {"activation_scheme", "static"}, {"ignored_layers", {"lm_head"}}};
  ModelConfig c = parse_glm(j);
  EXPECT_TRUE(c.quantization.is_fp8());
  EXPECT_EQ(c.quantization.block_rows, 0);
  EXPECT_TRUE(c.quantization.excludes("lm_head.weight"));
  j["quantization_config"] = {{"quant_method", "fbgemm_fp8"},
                              {"activation_scale_ub", 1200.0},
                              {"modules_to_not_convert", {"lm_head"}}};
  c = parse_glm(j);
  EXPECT_TRUE(c.quantization.is_fp8());
  EXPECT_TRUE(c.quantization.excludes("lm_head.weight"));
  EXPECT_FALSE(c.quantization.excludes("model.layers.0.mlp.down_proj.weight"));
  const json weights = {{"num_bits", 8},
                        {"type", "float"},
                        {"strategy", "channel"},
                        {"symmetric", true},
                        {"dynamic", false}};
  const json dynamic_tokens = {
      {"num_bits", 8}, {"type", "float"}, {"strategy", "token"}, {"dynamic", true}};
  const json ct = {
      {"quant_method", "compressed-tensors"},
      {"format", "float-quantized"},
      {"config_groups",
       {{"group_0",
         {{"targets", {"Linear"}}, {"weights", weights}, {"input_activations", dynamic_tokens}}}}},
      {"ignore", {"lm_head", "re:.*mlp\\.gate$"}},
      {"kv_cache_scheme", nullptr}};
  j["quantization_config"] = ct;
  c = parse_glm(j);
  EXPECT_TRUE(c.quantization.is_fp8());
  EXPECT_EQ(c.quantization.block_rows, 0);
  EXPECT_TRUE(c.quantization.excludes("lm_head.weight"));
  EXPECT_TRUE(c.quantization.excludes("model.layers.3.mlp.gate.weight"));
  EXPECT_FALSE(c.quantization.excludes("model.layers.3.mlp.gate_proj.weight"));
  EXPECT_FALSE(c.quantization.excludes("model.layers.3.mlp.experts.0.up_proj.weight"));
  // re.match anchors at the start only: "mlp" must not match a module that merely contains it.
  json k = ct;
  k["ignore"] = {"re:mlp"};
  j["quantization_config"] = k;
  EXPECT_FALSE(parse_glm(j).quantization.excludes("model.layers.3.mlp.gate.weight"));
  k["ignore"] = {"re:model\\.layers\\.3\\."};
  j["quantization_config"] = k;
  EXPECT_TRUE(parse_glm(j).quantization.excludes("model.layers.3.mlp.gate.weight"));
  EXPECT_FALSE(parse_glm(j).quantization.excludes("model.layers.30.mlp.gate.weight"));
  // Blocks of 128 are read; other schemes are refused naming the value and the valid ones.
  const auto with_weights = [&](const char* key, const json& value) {
    json q = ct;
    q["config_groups"]["group_0"]["weights"][key] = value;
    json m = j;
    m["quantization_config"] = q;
    return m;
  };
  json m = with_weights("strategy", "block");
  m["quantization_config"]["config_groups"]["group_0"]["weights"]["block_structure"] = {128, 128};
  EXPECT_EQ(parse_glm(m).quantization.block_rows, 128);
  m["quantization_config"]["config_groups"]["group_0"]["weights"]["block_structure"] = {64, 64};
  std::string msg = error_of_glm(m);
  EXPECT_NE(msg.find("block_structure = [64,64]"), std::string::npos) << msg;
  msg = error_of_glm(with_weights("strategy", "group"));
  EXPECT_NE(msg.find("'group'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tensor, channel, block"), std::string::npos) << msg;
  msg = error_of_glm(with_weights("type", "int"));
  EXPECT_NE(msg.find("8-bit 'int'"), std::string::npos) << msg;
  msg = error_of_glm(with_weights("num_bits", 4));
  EXPECT_NE(msg.find("4-bit 'float'"), std::string::npos) << msg;
  json q = ct;
  q["format"] = "pack-quantized";
  j["quantization_config"] = q;
  msg = error_of_glm(j);
  EXPECT_NE(msg.find("'pack-quantized'"), std::string::npos) << msg;
  q = ct;
  q["ignore"] = {"re:("};
  j["quantization_config"] = q;
  msg = error_of_glm(j);
  EXPECT_NE(msg.find("'re:('"), std::string::npos) << msg;
  q = ct;
  q["config_groups"] = json::object();
  j["quantization_config"] = q;
  EXPECT_NE(error_of_glm(j).find("config_groups"), std::string::npos);
  j["quantization_config"] = {{"quant_method", "awq"}};
  msg = error_of_glm(j);
  EXPECT_NE(msg.find("'awq'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("compressed-tensors"), std::string::npos) << msg;
}

TEST(ModelConfig, Qwen3AndQwen3Moe) {
  json j = json::parse(R"({
    "architectures": ["Qwen3MoeForCausalLM"], "vocab_size": 1000, "hidden_size": 64,
    "intermediate_size": 128, "moe_intermediate_size": 32, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 24,
    "num_local_experts": 6, "num_experts_per_tok": 2, "norm_topk_prob": true,
    "decoder_sparse_step": 2, "mlp_only_layers": [3], "max_position_embeddings": 256})");
  const ModelConfig c = parse_glm(j);
  EXPECT_EQ(c.arch, ModelArch::kQwen3Moe);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_EQ(c.head_dim, 24);
  EXPECT_EQ(c.moe.n_routed_experts, 6);
  EXPECT_EQ(c.moe.n_shared_experts, 0);
  EXPECT_EQ(c.moe.scoring_func, ScoringFunc::kSoftmax);
  // (layer + 1) % 2 == 0 and not in mlp_only_layers: only layer 1 (layer 3 is listed).
  EXPECT_EQ(c.moe.moe_layers, (std::vector<bool>{false, true, false, false}));
  j["mlp_only_layers"] = {7};
  EXPECT_NE(error_of_glm(j).find("mlp_only_layers"), std::string::npos);
  j["architectures"] = {"Qwen3ForCausalLM"};
  j.erase("mlp_only_layers");
  const ModelConfig dense = parse_glm(j);
  EXPECT_TRUE(dense.qk_norm);
  EXPECT_FALSE(dense.is_moe());
}

}  // namespace
}  // namespace ctxpar::model

namespace ctxpar::model {
namespace {

// Loading details: YaRN's attention_factor reaches the RoPE table, V3-family routing defaults
// to transformers' (sigmoid + noaux_tc) when the keys are missing, MTP layers are counted.
TEST(ModelConfig, YarnAttentionFactorReachesTheRopeMagnitude) {
  nlohmann::json j = nlohmann::json::parse(R"({
    "architectures": ["DeepseekV3ForCausalLM"], "vocab_size": 100, "hidden_size": 64,
    "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8, "v_head_dim": 8,
    "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16,
    "max_position_embeddings": 128, "num_nextn_predict_layers": 1,
    "rope_parameters": {"rope_type": "yarn", "rope_theta": 10000, "factor": 4,
                        "original_max_position_embeddings": 32, "attention_factor": 1.25}})");
  const ModelConfig c = parse_model_config(j.dump(), "yarn.json");
  EXPECT_DOUBLE_EQ(c.rope.attention_factor, 1.25);
  EXPECT_DOUBLE_EQ(make_rope_cache(c)->magnitude_scale(), 1.25);
  EXPECT_EQ(c.num_nextn_predict_layers, 1);
  EXPECT_EQ(c.moe.scoring_func, ScoringFunc::kSigmoid);
  EXPECT_EQ(c.moe.topk_method, TopkMethod::kNoauxTc);
  // Without it: mscale(factor, 1) = 0.1·ln 4 + 1, whatever mscale alone says.
  j["rope_parameters"].erase("attention_factor");
  j["rope_parameters"]["mscale"] = 0.5;
  EXPECT_NEAR(make_rope_cache(parse_model_config(j.dump(), "yarn.json"))->magnitude_scale(),
              0.1 * std::log(4.0) + 1, 1e-12);
  j["rope_parameters"]["attention_factor"] = -1;
  try {
    parse_model_config(j.dump(), "yarn.json");
    ADD_FAILURE() << "a negative attention_factor was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("attention_factor"), std::string::npos) << e.what();
  }
  // DeepSeek-V2 keeps softmax / greedy as its default.
  j["architectures"] = {"DeepseekV2ForCausalLM"};
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000}};
  const ModelConfig v2 = parse_model_config(j.dump(), "v2.json");
  EXPECT_EQ(v2.moe.scoring_func, ScoringFunc::kSoftmax);
  EXPECT_EQ(v2.moe.topk_method, TopkMethod::kGreedy);
}

// vLLM's --hf-overrides: the keys of a JSON object replace config.json's before it is parsed, for
// a directory, a config.json path and a built-in alike. A rope_scaling override of a
// transformers-5 config (RoPE in rope_parameters, with its theta) lands in rope_parameters, so
// the scaling is not lost and the theta stays. The derived maximum context follows vLLM: YaRN's
// original context times its factor, linear scaling's max_position_embeddings times its factor.
TEST(ModelConfigFile, HfOverridesReplaceConfigKeysBeforeParsing) {
  CTXPAR_SEEDED_RNG(rng);
  const GqaSizes sizes = random_gqa(rng);
  json j = llama_json(sizes);
  j["max_position_embeddings"] = 4096;
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500000.0}};
  testing::TempDir dir;
  { std::ofstream(dir.file("config.json")) << j.dump(); }
  const int64_t original = uniform_int(rng, 1000, 8000);
  const double factor = 2.0 + static_cast<double>(uniform_int(rng, 0, 6));
  const json yarn = {
      {"rope_scaling",
       {{"rope_type", "yarn"}, {"factor", factor}, {"original_max_position_embeddings", original}}},
      {"max_position_embeddings", 9000}};
  for (const std::string& model : {dir.path().string(), dir.file("config.json")}) {
    SCOPED_TRACE(model);
    const ModelConfig plain = resolve_model_config(model);
    EXPECT_EQ(plain.rope.type, RopeType::kDefault);
    EXPECT_EQ(derived_max_model_len(plain), 4096);
    EXPECT_EQ(resolve_model_config(model, "{}").max_position_embeddings, 4096);
    const ModelConfig c = resolve_model_config(model, yarn.dump());
    EXPECT_EQ(c.max_position_embeddings, 9000);
    EXPECT_EQ(c.rope.type, RopeType::kYarn);
    EXPECT_EQ(c.rope.factor, factor);
    EXPECT_EQ(c.rope.theta, 500000.0) << "rope_parameters' theta stays";
    EXPECT_EQ(c.rope.original_max_position_embeddings, original);
    EXPECT_EQ(derived_max_model_len(c),
              static_cast<int64_t>(static_cast<double>(original) * factor));
    EXPECT_EQ(c.hidden_size, sizes.hidden) << "keys not overridden stay";
  }
  // Linear scaling on a built-in (rope_scaling form); llama3 keeps max_position_embeddings.
  const ModelConfig linear = resolve_model_config(
      "builtin:tiny-llama", R"({"rope_scaling": {"type": "linear", "factor": 3.0}})");
  EXPECT_EQ(linear.rope.type, RopeType::kLinear);
  EXPECT_EQ(derived_max_model_len(linear), 3 * linear.max_position_embeddings);
  const ModelConfig llama3 = resolve_model_config(
      "builtin:tiny-llama",
      R"({"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
          "high_freq_factor": 4.0, "original_max_position_embeddings": 64}})");
  EXPECT_EQ(derived_max_model_len(llama3), llama3.max_position_embeddings);

  for (const char* bad : {"[1, 2]", "\"yarn\"", "{rope", "3"}) {
    const std::string msg = error_of([&] { resolve_model_config(dir.path().string(), bad); });
    EXPECT_NE(msg.find("--hf-overrides"), std::string::npos) << msg;
    EXPECT_NE(msg.find(bad), std::string::npos) << msg;
  }
  // An override is parsed like the file: a bad value is the parser's error.
  const std::string msg = error_of([&] {
    resolve_model_config(dir.path().string(), R"({"rope_scaling": {"rope_type": "warp"}})");
  });
  EXPECT_NE(msg.find("warp"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ctxpar::model
