// engine::load_tokenizer: the byte tokenizer for built-in models, a model directory's (or
// --tokenizer's) Hugging Face files otherwise, and the EOS ids that end generation
// (tokenizer_config, generation_config, config.json), which also reach the engine config.
#include "ctxpar/engine/tokenizer_loader.h"

#include <gtest/gtest.h>

#include "ctxpar/core/error.h"
#include "ctxpar/engine/engine_config.h"
#include "ctxpar/tokenizer/byte_tokenizer.h"
#include "ctxpar/tokenizer/hf_tokenizer.h"
#include "ctxpar/tokenizer/json_node.h"
#include "tokenizer/temp_dir.h"

namespace ctxpar::engine {
namespace {

using tokenizer::test::TempDir;

// A model directory: the tiny Llama fixture's config.json (vocabulary widened to hold the
// tokenizer's ids, EOS 5) with the llama3 fixture's tokenizer files.
void make_model_dir(const TempDir& dir) {
  nlohmann::json config = tokenizer::read_json_file(std::string(CTXPAR_FIXTURES_DIR) +
                                                    "/tiny-llama-fixture/config.json");
  config["vocab_size"] = 2048;
  config["eos_token_id"] = 5;
  dir.copy_fixture("llama3");
  dir.write_json("config.json", config);
}

TEST(TokenizerLoader, BuiltinModelsUseTheByteTokenizer) {
  const tokenizer::LoadedTokenizer t = load_tokenizer("builtin:tiny-qwen2");
  ASSERT_NE(dynamic_cast<const tokenizer::ByteTokenizer*>(t.tokenizer.get()), nullptr);
  EXPECT_EQ(t.tokenizer->vocab_size(), 512);
  EXPECT_EQ(t.bos_token_id, 256);
  EXPECT_EQ(t.eos_token_ids, (std::vector<int32_t>{257, 258}));  // config.json's list
  EXPECT_EQ(t.tokenizer->encode("hi"), (std::vector<int32_t>{256, 'h', 'i'}));
}

TEST(TokenizerLoader, ModelDirectoryEosIdsAreTheUnion) {
  const TempDir dir;
  make_model_dir(dir);
  const tokenizer::LoadedTokenizer t = load_tokenizer(dir.path().string());
  const auto* hf = dynamic_cast<const tokenizer::HfTokenizer*>(t.tokenizer.get());
  ASSERT_NE(hf, nullptr);
  const int32_t eot = *hf->token_to_id("<|eot_id|>"), end = *hf->token_to_id("<|end_of_text|>"),
                eom = *hf->token_to_id("<|eom_id|>");
  // tokenizer_config's eos, generation_config's three (eot once), config.json's.
  EXPECT_EQ(t.eos_token_ids, (std::vector<int32_t>{eot, end, eom, 5}));
  // --model may name config.json itself.
  EXPECT_EQ(load_tokenizer((dir.path() / "config.json").string()).eos_token_ids, t.eos_token_ids);

  // The engine ends generation on generation_config.json's ids even without the tokenizer.
  EngineConfig config;
  config.model = dir.path().string();
  config.load_format = "dummy";
  const ResolvedEngineConfig resolved = resolve_engine_config(config);
  EXPECT_EQ(resolved.model.eos_token_ids, (std::vector<int64_t>{5, end, eom, eot}));
}

TEST(TokenizerLoader, TokenizerFlagOverridesTheModelDirectory) {
  const TempDir model, tok;
  make_model_dir(model);
  tok.copy_fixture("qwen2");
  const tokenizer::LoadedTokenizer t = load_tokenizer(model.path().string(), tok.path().string());
  EXPECT_EQ(t.eos_token, "<|im_end|>");
  ASSERT_NE(t.chat_template("tool_use"), nullptr);
  // generation_config.json comes from the model directory (as vLLM reads it), not --tokenizer.
  EXPECT_EQ(t.generation.temperature, 0.6);
  // A built-in model with --tokenizer uses that tokenizer.
  const tokenizer::LoadedTokenizer b = load_tokenizer("builtin:tiny-llama", tok.path().string());
  EXPECT_NE(dynamic_cast<const tokenizer::HfTokenizer*>(b.tokenizer.get()), nullptr);
}

TEST(TokenizerLoader, MissingTokenizerIsNamed) {
  const TempDir dir;
  make_model_dir(dir);
  std::filesystem::remove(dir.path() / "tokenizer.json");
  try {
    load_tokenizer(dir.path().string());
    ADD_FAILURE() << "loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir.path().string() + " has no tokenizer.json"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(load_tokenizer("builtin:no-such-model"), Error);
}

}  // namespace
}  // namespace ctxpar::engine
