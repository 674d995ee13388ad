// Random inputs never break a tokenizer: random byte strings (invalid UTF-8 included) encode to
// ids inside the vocabulary, random id sequences decode, only out-of-range ids throw. Also: the
// raw-byte BPE path gives the ids of the general byte-level path, and byte-level tokenizers
// without a normalizer round-trip any text.
#include <gtest/gtest.h>

#include <random>

#include "ctxpar/core/error.h"
#include "ctxpar/tokenizer/hf_tokenizer.h"
#include "ctxpar/tokenizer/json_node.h"
#include "ctxpar/tokenizer/utf8.h"
#include "tokenizer/fixture_goldens.h"

namespace ctxpar::tokenizer {
namespace {

std::string fixture_path(const std::string& name) {
  return std::string(CTXPAR_FIXTURES_DIR) + "/tokenizers/" + name + "/tokenizer.json";
}

// Random bytes: a mix of ASCII, whitespace runs, multi-byte characters, pieces of the
// fixture's added tokens, and bytes that are not UTF-8.
std::string random_text(std::mt19937_64& rng, size_t max_len,
                        const std::vector<std::string>& extras) {
  static const std::vector<std::string> pool = {"a",
                                                "Z",
                                                "7",
                                                " ",
                                                "  ",
                                                "\n",
                                                "\t",
                                                "\r\n",
                                                "'s",
                                                "é",
                                                "e\xCC\x81",
                                                "你",
                                                "日本",
                                                "ا",
                                                "\xF0\x9F\x91\x8D",
                                                "\xE2\x80\x8D",
                                                "\xC2\xA0",
                                                "\xE3\x80\x80",
                                                "\xE2\x96\x81",
                                                "<",
                                                ">",
                                                "<0x41>",
                                                "-",
                                                ",",
                                                ";",
                                                "1234",
                                                "\xEF\xBF\xBD"};
  std::string s;
  const size_t n = rng() % (max_len + 1);
  while (s.size() < n) {
    switch (rng() % 6) {
      case 0:
        s.push_back(static_cast<char>(rng() % 256));  // anything, often invalid
        break;
      case 1:
        if (!extras.empty()) {
          const std::string& e = extras[rng() % extras.size()];
          s += rng() % 2 ? e : e.substr(0, rng() % (e.size() + 1));
          break;
        }
        [[fallthrough]];
      default:
        s += pool[rng() % pool.size()];
    }
  }
  return s;
}

class TokenizerFuzz : public ::testing::TestWithParam<std::string> {};

TEST_P(TokenizerFuzz, RandomBytesEncodeAndRandomIdsDecode) {
  const auto tok = HfTokenizer::from_file(fixture_path(GetParam()));
  const test::FixtureGoldens g = test::load_goldens(GetParam());
  std::vector<std::string> added;
  for (const auto& [id, token] : g.id_to_token) {
    if (token && tok->is_special(id)) added.push_back(*token);
  }
  std::mt19937_64 rng(std::random_device{}());
  const int32_t n = tok->vocab_size();
  for (int iter = 0; iter < 300; ++iter) {
    const std::string text = random_text(rng, 80, added);
    const std::vector<int32_t> ids = tok->encode(text, iter % 2 == 0);
    for (const int32_t id : ids) ASSERT_TRUE(id >= 0 && id < n) << id;
    // Invalid bytes are read as U+FFFD first: the repaired text encodes the same.
    EXPECT_EQ(tok->encode(utf8::repair(text), iter % 2 == 0), ids);
    const std::string back = tok->decode(ids, iter % 3 == 0);
    EXPECT_TRUE(utf8::is_valid(back));

    std::vector<int32_t> random_ids(rng() % 30);
    for (int32_t& id : random_ids) id = static_cast<int32_t>(rng() % n);
    EXPECT_TRUE(utf8::is_valid(tok->decode(random_ids, rng() % 2 == 0)));
    random_ids.push_back(rng() % 2 ? n + static_cast<int32_t>(rng() % 1000) : -1);
    EXPECT_THROW(tok->decode(random_ids), Error);
  }
  EXPECT_FALSE(tok->id_to_token(n).has_value());
  EXPECT_FALSE(tok->id_to_token(-1).has_value());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TokenizerFuzz, ::testing::ValuesIn(test::fixture_names()),
                         [](const auto& p) { return p.param; });

// Byte-level fixtures with no normalizer: decode(encode(text)) is the text.
TEST(TokenizerFuzz, ByteLevelRoundTrip) {
  std::mt19937_64 rng(std::random_device{}());
  for (const std::string name : {"gpt2", "llama3", "deepseek_v3"}) {
    const auto tok = HfTokenizer::from_file(fixture_path(name));
    for (int iter = 0; iter < 200; ++iter) {
      const std::string text = utf8::repair(random_text(rng, 120, {}));
      EXPECT_EQ(tok->decode(tok->encode(text, false), false), text) << name;
    }
  }
}

// The byte-level pre-tokenizer normally hands raw bytes to the model; hiding it inside a
// trailing Sequence forces the general path (mapped characters). Both give the same ids.
TEST(TokenizerFuzz, RawBytePathEqualsMappedPath) {
  std::mt19937_64 rng(std::random_device{}());
  for (const std::string name : {"gpt2", "llama3", "qwen2", "deepseek_v3", "splits", "roberta"}) {
    nlohmann::json j = read_json_file(fixture_path(name));
    const HfTokenizer fast(j, name);
    nlohmann::json pre = j["pre_tokenizer"];
    j["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers",
         {pre, {{"type", "Sequence"}, {"pretokenizers", nlohmann::json::array()}}}}};
    const HfTokenizer general(j, name + " (general path)");
    for (int iter = 0; iter < 200; ++iter) {
      const std::string text = random_text(rng, 100, {});
      EXPECT_EQ(fast.encode(text, true), general.encode(text, true)) << name;
    }
  }
}

}  // namespace
}  // namespace ctxpar::tokenizer
