#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/tokenizer/byte_tokenizer.h"
#include "support/seeded_rng.h"

namespace ctxpar::tokenizer {
namespace {

// A random valid UTF-8 string of 1- to 4-byte characters (no surrogates).
std::string random_utf8(std::mt19937_64& rng, int chars) {
  std::string s;
  for (int i = 0; i < chars; ++i) {
    uint32_t cp = 0;
    switch (rng() % 4) {
      case 0:
        cp = static_cast<uint32_t>(rng() % 0x80);
        break;
      case 1:
        cp = 0x80 + static_cast<uint32_t>(rng() % (0x800 - 0x80));
        break;
      case 2:
        do cp = 0x800 + static_cast<uint32_t>(rng() % (0x10000 - 0x800));
        while (cp >= 0xD800 && cp <= 0xDFFF);
        break;
      default:
        cp = 0x10000 + static_cast<uint32_t>(rng() % (0x110000 - 0x10000));
        break;
    }
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xE0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      s += static_cast<char>(0xF0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return s;
}

TEST(ByteTokenizer, RoundTripsRandomUtf8) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const int32_t vocab = 257 + static_cast<int32_t>(rng() % 256);
  const int32_t bos = 256 + static_cast<int32_t>(rng() % (vocab - 256));
  const ByteTokenizer plain(vocab);
  const ByteTokenizer with_bos(vocab, bos);
  const Tokenizer& as_interface = with_bos;
  for (int trial = 0; trial < 300; ++trial) {
    const std::string text = random_utf8(rng, static_cast<int>(rng() % 60));
    const std::vector<int32_t> ids = plain.encode(text);
    ASSERT_EQ(ids.size(), text.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      EXPECT_EQ(ids[i], static_cast<unsigned char>(text[i]));
    }
    EXPECT_EQ(plain.decode(ids), text);
    const std::vector<int32_t> with = as_interface.encode(text);
    ASSERT_EQ(with.size(), text.size() + 1);
    EXPECT_EQ(with[0], bos);
    EXPECT_EQ(as_interface.decode(with), text) << "BOS is skipped";
    EXPECT_EQ(as_interface.encode(text, /*add_special_tokens=*/false), ids);
    EXPECT_EQ(as_interface.decode(with, /*skip_special_tokens=*/false),
              "<|" + std::to_string(bos) + "|>" + text);
  }
}

TEST(ByteTokenizer, SpecialTokensAreSkippedOrRendered) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  const ByteTokenizer tokenizer(600);
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<int32_t> ids;
    std::string bytes_only, rendered;
    for (int i = 0; i < static_cast<int>(rng() % 30); ++i) {
      const int32_t id = static_cast<int32_t>(rng() % 600);
      ids.push_back(id);
      if (id < 256) {
        bytes_only += static_cast<char>(id);
        rendered += static_cast<char>(id);
      } else {
        rendered += "<|" + std::to_string(id) + "|>";
      }
    }
    EXPECT_EQ(tokenizer.decode(ids), bytes_only);
    EXPECT_EQ(tokenizer.decode(ids, /*skip_special_tokens=*/false), rendered);
  }
  EXPECT_THROW(tokenizer.decode(std::vector<int32_t>{65, -1}), Error);
  EXPECT_THROW(tokenizer.decode(std::vector<int32_t>{65, 600}), Error);
  EXPECT_THROW(ByteTokenizer(600, static_cast<int32_t>(rng() % 256)), Error);
  EXPECT_THROW(ByteTokenizer(600, 600), Error);
  EXPECT_THROW(ByteTokenizer(255), Error);
  EXPECT_EQ(tokenizer.id_to_token(65), "A");
  EXPECT_EQ(tokenizer.id_to_token(300), "<|300|>");
  EXPECT_EQ(tokenizer.id_to_token(600), std::nullopt);
}

}  // namespace
}  // namespace ctxpar::tokenizer
