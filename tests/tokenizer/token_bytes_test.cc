// token_bytes: the bytes each token adds, which structured outputs match tokens by. For
// byte-level BPE, the tokens of any text, spelled by token_bytes one by one, give the text back
// byte for byte (characters split across tokens included); special tokens have none.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "ctxpar/tokenizer/byte_tokenizer.h"
#include "ctxpar/tokenizer/tokenizer_files.h"
#include "support/seeded_rng.h"

namespace ctxpar::tokenizer {
namespace {

std::string random_text(std::mt19937_64& rng) {
  const std::vector<std::string> pieces = {
      "{\"name\": ", "\"",    "héllo", " wörld", "中文字符", "😀🎉",      "\\u00e9",
      "12345",       "\n\t ", "<|",    "[1, 2]", "Ω≈ç",      "\xD0\x96"};
  std::string t;
  for (int i = 0; i < 8; ++i) t += pieces[rng() % pieces.size()];
  return t;
}

TEST(TokenBytes, ByteLevelTokensSpellTheText) {
  SEEDED_RNG(rng);
  for (const char* name : {"llama3", "qwen2", "gpt2", "deepseek_v3"}) {
    const std::string dir = std::string(CTXPAR_FIXTURES_DIR) + "/tokenizers/" + name;
    const LoadedTokenizer loaded = load_hf_tokenizer(dir, dir);
    const Tokenizer& tok = *loaded.tokenizer;
    for (int k = 0; k < 50; ++k) {
      const std::string text = random_text(rng);
      std::string spelled;
      for (const int32_t id : tok.encode(text, false)) {
        const auto bytes = tok.token_bytes(id);
        ASSERT_TRUE(bytes.has_value()) << name << " token " << id;
        spelled += *bytes;
      }
      EXPECT_EQ(spelled, text) << name;
    }
    if (loaded.eos_token_id) {
      EXPECT_FALSE(tok.token_bytes(*loaded.eos_token_id).has_value()) << name;
    }
    EXPECT_FALSE(tok.token_bytes(-1).has_value());
    EXPECT_FALSE(tok.token_bytes(tok.vocab_size()).has_value());
  }
}

TEST(TokenBytes, ByteTokenizer) {
  const ByteTokenizer tok(260, 256);
  EXPECT_EQ(tok.token_bytes(0xE4), std::string("\xE4"));
  EXPECT_FALSE(tok.token_bytes(256).has_value());
}

}  // namespace
}  // namespace ctxpar::tokenizer
