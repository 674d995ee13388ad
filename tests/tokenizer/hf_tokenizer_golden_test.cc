// HfTokenizer against the Python `tokenizers` goldens of every fixture (loaded with its
// tokenizer_config.json, as the goldens were made): ids, decoded text with and without
// skip_special_tokens, id_to_token, vocab size.
#include <gtest/gtest.h>

#include "ctxpar/tokenizer/tokenizer_files.h"
#include "tokenizer/fixture_goldens.h"

namespace ctxpar::tokenizer {
namespace {

class HfTokenizerGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(HfTokenizerGolden, EncodeWithoutSpecialTokens) {
  const test::FixtureGoldens g = test::load_goldens(GetParam());
  const auto tok = load_hf_tokenizer(g.dir, "").tokenizer;
  for (const auto& c : g.encode) {
    EXPECT_EQ(tok->encode(c.text, false), c.ids_no_special) << "text: " << c.text;
  }
}

TEST_P(HfTokenizerGolden, DecodeRandomIds) {
  const test::FixtureGoldens g = test::load_goldens(GetParam());
  const auto tok = load_hf_tokenizer(g.dir, "").tokenizer;
  for (const auto& c : g.decode) {
    EXPECT_EQ(tok->decode(c.ids, true), c.text) << ::testing::PrintToString(c.ids);
    EXPECT_EQ(tok->decode(c.ids, false), c.text_with_special) << ::testing::PrintToString(c.ids);
  }
  for (const auto& c : g.encode) {
    EXPECT_EQ(tok->decode(c.ids, true), c.decoded) << "text: " << c.text;
    EXPECT_EQ(tok->decode(c.ids, false), c.decoded_with_special) << "text: " << c.text;
  }
}

TEST_P(HfTokenizerGolden, IdToTokenAndVocabSize) {
  const test::FixtureGoldens g = test::load_goldens(GetParam());
  const auto tok = load_hf_tokenizer(g.dir, "").tokenizer;
  EXPECT_EQ(tok->vocab_size(), g.vocab_size);
  for (const auto& [id, token] : g.id_to_token) EXPECT_EQ(tok->id_to_token(id), token) << id;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HfTokenizerGolden, ::testing::ValuesIn(test::fixture_names()),
                         [](const auto& p) { return p.param; });

}  // namespace
}  // namespace ctxpar::tokenizer
