// The tokenizer of a model directory as transformers loads it (tokenizer_config.json's named
// special tokens and LlamaTokenizerFast's add_bos/add_eos rewrite, chat templates,
// generation_config.json) against the fixtures' goldens.
#include "ctxpar/tokenizer/tokenizer_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>

#include "ctxpar/core/error.h"
#include "ctxpar/tokenizer/hf_tokenizer.h"
#include "tokenizer/fixture_goldens.h"

namespace ctxpar::tokenizer {
namespace {

class TokenizerFiles : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerFiles, EncodeWithSpecialTokensAsTransformers) {
  const test::FixtureGoldens g = test::load_goldens(GetParam());
  const LoadedTokenizer t = load_hf_tokenizer(g.dir, g.dir);
  for (const auto& c : g.encode) {
    EXPECT_EQ(t.tokenizer->encode(c.text, true), c.ids) << "text: " << c.text;
    EXPECT_EQ(t.tokenizer->encode(c.text, false), c.ids_no_special) << "text: " << c.text;
    EXPECT_EQ(t.tokenizer->decode(c.ids, true), c.decoded) << "text: " << c.text;
  }
  EXPECT_EQ(t.tokenizer->vocab_size(), g.vocab_size);
}

TEST_P(TokenizerFiles, SpecialTokensEosIdsAndTemplates) {
  const test::FixtureGoldens g = test::load_goldens(GetParam());
  const LoadedTokenizer t = load_hf_tokenizer(g.dir, g.dir);
  EXPECT_EQ(t.bos_token, g.config.bos_token);
  EXPECT_EQ(t.eos_token, g.config.eos_token);
  EXPECT_EQ(t.bos_token_id, g.config.bos_token_id);
  EXPECT_EQ(t.eos_token_id, g.config.eos_token_id);
  std::vector<int32_t> want_eos;
  if (g.config.eos_token_id) want_eos.push_back(*g.config.eos_token_id);
  for (const int32_t id : g.config.generation_eos_token_ids) {
    if (std::find(want_eos.begin(), want_eos.end(), id) == want_eos.end()) want_eos.push_back(id);
  }
  EXPECT_EQ(t.eos_token_ids, want_eos);
  std::vector<std::string> names;
  for (const auto& ct : t.chat_templates) names.push_back(ct.name);
  EXPECT_EQ(names, g.config.chat_template_names);
  for (const auto& name : names) {
    ASSERT_NE(t.chat_template(name), nullptr);
    EXPECT_FALSE(t.chat_template(name)->empty());
  }
  EXPECT_EQ(t.chat_template("no-such-template"), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TokenizerFiles, ::testing::ValuesIn(test::fixture_names()),
                         [](const auto& p) { return p.param; });

TEST(TokenizerFiles, Llama3HasThreeEosIdsAndSamplingDefaults) {
  const LoadedTokenizer t =
      load_hf_tokenizer(std::string(CTXPAR_FIXTURES_DIR) + "/tokenizers/llama3",
                        std::string(CTXPAR_FIXTURES_DIR) + "/tokenizers/llama3");
  const auto* hf = dynamic_cast<const HfTokenizer*>(t.tokenizer.get());
  ASSERT_NE(hf, nullptr);
  const std::vector<int32_t> want = {*hf->token_to_id("<|eot_id|>"),
                                     *hf->token_to_id("<|end_of_text|>"),
                                     *hf->token_to_id("<|eom_id|>")};
  EXPECT_EQ(t.eos_token_ids, want);
  EXPECT_EQ(t.generation.temperature, 0.6);
  EXPECT_EQ(t.generation.top_p, 0.9);
  EXPECT_FALSE(t.generation.top_k.has_value());
}

TEST(TokenizerFiles, Qwen2GenerationDefaultsAndNamedTemplates) {
  const std::string dir = std::string(CTXPAR_FIXTURES_DIR) + "/tokenizers/qwen2";
  const LoadedTokenizer t = load_hf_tokenizer(dir, dir);
  EXPECT_EQ(t.generation.temperature, 0.7);
  EXPECT_EQ(t.generation.top_p, 0.8);
  EXPECT_EQ(t.generation.top_k, 20);
  EXPECT_EQ(t.generation.repetition_penalty, 1.05);
  EXPECT_EQ(t.generation.min_p, 0.0);
  EXPECT_EQ(t.generation.max_new_tokens, 2048);
  ASSERT_NE(t.chat_template("tool_use"), nullptr);
  EXPECT_TRUE(t.chat_template("tool_use")->starts_with("{{ tools | tojson }}"));
  // Without a generation directory only the tokenizer's EOS ends generation.
  const LoadedTokenizer no_gen = load_hf_tokenizer(dir, "");
  EXPECT_EQ(no_gen.eos_token_ids, std::vector<int32_t>{*no_gen.eos_token_id});
  EXPECT_FALSE(no_gen.generation.temperature.has_value());
}

TEST(TokenizerFiles, ChatTemplateFileIsTheDefault) {
  const std::string dir = std::string(CTXPAR_FIXTURES_DIR) + "/tokenizers/deepseek_v3";
  const LoadedTokenizer t = load_hf_tokenizer(dir, dir);
  ASSERT_NE(t.chat_template(), nullptr);
  EXPECT_NE(t.chat_template()->find("<｜Assistant｜>"), std::string::npos);
}

TEST(TokenizerFiles, LlamaClassRewritesThePostProcessor) {
  EXPECT_TRUE(rewrites_post_processor("LlamaTokenizerFast"));
  EXPECT_TRUE(rewrites_post_processor("GemmaTokenizer"));
  EXPECT_FALSE(rewrites_post_processor("PreTrainedTokenizerFast"));
  EXPECT_FALSE(rewrites_post_processor("Qwen2TokenizerFast"));
  // mistral: tokenizer.json has no post-processor; add_bos_token and add_eos_token add both.
  const std::string dir = std::string(CTXPAR_FIXTURES_DIR) + "/tokenizers/mistral";
  const LoadedTokenizer t = load_hf_tokenizer(dir, dir);
  const std::vector<int32_t> ids = t.tokenizer->encode("hello", true);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.front(), *t.bos_token_id);
  EXPECT_EQ(ids.back(), *t.eos_token_id);
  EXPECT_EQ(std::vector<int32_t>(ids.begin() + 1, ids.end() - 1),
            t.tokenizer->encode("hello", false));
}

// tokenizer_config.json truncation_side (the end truncate_prompt_tokens keeps): "right" unless
// it says "left"; anything else is refused naming the field.
TEST(TokenizerFiles, TruncationSide) {
  namespace fs = std::filesystem;
  const fs::path src = fs::path(CTXPAR_FIXTURES_DIR) / "tokenizers" / "qwen2";
  EXPECT_EQ(load_hf_tokenizer(src.string(), "").truncation_side, "right");
  const fs::path dir =
      fs::temp_directory_path() / ("ctxpar-trunc-" + std::to_string(std::random_device{}()));
  fs::create_directories(dir);
  fs::copy_file(src / "tokenizer.json", dir / "tokenizer.json");
  for (const auto& [side, ok] : {std::pair<std::string, bool>{"left", true}, {"middle", false}}) {
    std::ofstream(dir / "tokenizer_config.json") << R"({"truncation_side": ")" << side << R"("})";
    if (ok) {
      EXPECT_EQ(load_hf_tokenizer(dir.string(), "").truncation_side, side);
    } else {
      try {
        load_hf_tokenizer(dir.string(), "");
        ADD_FAILURE() << "truncation_side " << side << " was taken";
      } catch (const InputError& e) {
        EXPECT_NE(std::string(e.what()).find("truncation_side"), std::string::npos) << e.what();
      }
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ctxpar::tokenizer
