// The SFA mode resolver: which of the four modes (T, N, enable_dsa_cp) selects, that the
// engine config turns --additional-config and the flashcomm1 environment variables into
// those modes, and that impossible combinations are rejected with the rule — at start-up,
// before a weight is read.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "ctxpar/core/error.h"
#include "ctxpar/engine/engine_config.h"
#include "ctxpar/engine/llm_engine.h"
#include "ctxpar/model/sfa_mode.h"

namespace ctxpar::model {
namespace {

// The message of the Error fn throws, or a failure if it does not throw one.
template <class Fn>
std::string error_of(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ctxpar::Error was thrown";
  return "";
}

void expect_mentions(const std::string& what, std::initializer_list<const char*> words) {
  for (const char* w : words) EXPECT_NE(what.find(w), std::string::npos) << w << " in: " << what;
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

TEST(SfaMode, FourModesFromTpDcpAndDsaCp) {
  const ModelConfig sparse = resolve_model_config("builtin:tiny-deepseek-v32");
  for (int t : {1, 2, 4, 8}) {
    SCOPED_TRACE(fmt::format("T={}", t));
    EXPECT_EQ(resolve_sfa_mode(sparse, t, 1, false), SfaMode::kNative);
    EXPECT_EQ(resolve_sfa_mode(sparse, t, 1, true), SfaMode::kDsaCp);
    if (t > 1) {
      EXPECT_EQ(resolve_sfa_mode(sparse, t, t, false), SfaMode::kSfaDcp);
      EXPECT_EQ(resolve_sfa_mode(sparse, t, t, true), SfaMode::kDsaCpDcp);
    }
  }
  EXPECT_TRUE(splits_tokens(SfaMode::kDsaCp) && splits_tokens(SfaMode::kDsaCpDcp));
  EXPECT_FALSE(splits_tokens(SfaMode::kNative) || splits_tokens(SfaMode::kSfaDcp));
  // Models without sparse attention have no SFA mode of their own.
  for (const char* m : {"builtin:tiny-llama", "builtin:tiny-deepseek-v3"}) {
    EXPECT_EQ(resolve_sfa_mode(resolve_model_config(m), 4, 2, false), SfaMode::kNative) << m;
  }
}

TEST(SfaMode, ImpossibleCombinationsNameTheRule) {
  const ModelConfig sparse = resolve_model_config("builtin:tiny-deepseek-v32");
  for (const char* m : {"builtin:tiny-llama", "builtin:tiny-qwen2", "builtin:tiny-deepseek-v3"}) {
    SCOPED_TRACE(m);
    expect_mentions(error_of([&] { resolve_sfa_mode(resolve_model_config(m), 2, 1, true); }),
                    {"enable_dsa_cp", "sparse", "index_n_heads"});
  }
  for (bool dsa_cp : {false, true}) {
    expect_mentions(error_of([&] { resolve_sfa_mode(sparse, 4, 2, dsa_cp); }),
                    {"N == T", "N=2", "T=4"});
  }
  expect_mentions(error_of([&] { resolve_sfa_mode(sparse, 4, 3, true); }), {"N=3", "T=4"});
  ModelOptions int8;
  int8.o_proj_quant = OProjQuant::kInt8;
  expect_mentions(error_of([&] {
                    validate_model_options(resolve_model_config("builtin:tiny-llama"), 2, 1, int8);
                  }),
                  {"o_proj_quant", "MLA"});
  EXPECT_NO_THROW(validate_model_options(sparse, 4, 4, int8));
  EXPECT_NO_THROW(
      validate_model_options(resolve_model_config("builtin:tiny-deepseek-v2"), 2, 2, int8));
}

TEST(SfaMode, EngineConfigTurnsFlagsIntoModes) {
  engine::EngineConfig c;
  c.model = "builtin:tiny-deepseek-v32";
  c.tensor_parallel_size = 4;
  c.decode_context_parallel_size = 4;
  c.additional_config =
      R"({"enable_dsa_cp": true, "enable_flashcomm1": true, "o_proj_quant": "int8"})";
  const engine::ResolvedEngineConfig r = engine::resolve_engine_config(c);
  EXPECT_TRUE(r.options.enable_dsa_cp);
  EXPECT_TRUE(r.options.sequence_parallel);
  EXPECT_EQ(r.options.o_proj_quant, OProjQuant::kInt8);

  c.additional_config = "{}";
  EXPECT_FALSE(engine::resolve_engine_config(c).options.sequence_parallel);
  for (const char* var : {"VLLM_ASCEND_ENABLE_FLASHCOMM1", "CTXPAR_ENABLE_FLASHCOMM1"}) {
    SCOPED_TRACE(var);
    {
      const ScopedEnv on(var, "1");
      EXPECT_TRUE(engine::resolve_engine_config(c).options.sequence_parallel);
    }
    {
      const ScopedEnv off(var, "0");
      EXPECT_FALSE(engine::resolve_engine_config(c).options.sequence_parallel);
    }
    const ScopedEnv bad(var, "yes please");
    expect_mentions(error_of([&] { engine::resolve_engine_config(c); }), {var, "yes please"});
  }
  c.additional_config = R"({"o_proj_quant": "fp8"})";
  expect_mentions(error_of([&] { engine::resolve_engine_config(c); }), {"o_proj_quant", "fp8"});
}

TEST(SfaMode, BadCombinationsFailBeforeAnyWeightIsRead) {
  // A model directory with a config.json and no weights at all: a config error must come
  // first, since no weight may be read before the modes are validated.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      fmt::format("ctxpar_dsa_cp_no_weights_{}", static_cast<unsigned>(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir / "config.json");
    out << R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 64,
      "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
      "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 128,
      "rms_norm_eps": 1e-6, "torch_dtype": "float32"})";
  }
  engine::EngineConfig c;
  c.model = dir.string();
  c.load_format = "safetensors";
  c.tensor_parallel_size = 2;
  c.kv_cache_memory = int64_t{1} << 20;
  c.additional_config = R"({"enable_dsa_cp": true})";
  engine::GenerationRequest request;
  request.prompt_token_ids = {1, 2, 3};
  const std::string what = error_of([&] { engine::generate(c, {request}); });
  std::filesystem::remove_all(dir);
  expect_mentions(what, {"enable_dsa_cp", "sparse"});
  EXPECT_EQ(what.find("safetensors"), std::string::npos) << what;
}

}  // namespace
}  // namespace ctxpar::model
