// Token masks against brute force: each token's bytes fed to a fresh copy of the matcher state,
// on a small random vocabulary, at states along the fixture's valid documents.
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "ctxpar/engine/structured/token_mask.h"
#include "structured/match_util.h"
#include "support/seeded_rng.h"

namespace ctxpar::structured {
namespace {

using nlohmann::ordered_json;

// Single bytes (so every text can be spelled), JSON-ish pieces, pieces of UTF-8 characters
// (split across tokens), and a few special tokens (nullopt).
std::vector<std::optional<std::string>> random_vocabulary(std::mt19937_64& rng) {
  std::vector<std::optional<std::string>> v;
  for (int b = 0; b < 256; ++b) v.emplace_back(std::string(1, static_cast<char>(b)));
  const std::vector<std::string> pieces = {"{\"",      "\":",
                                           "\", \"",   "\"}",
                                           "}",        "]",
                                           "[",        "[{",
                                           "null",     "true",
                                           "fal",      "se",
                                           ", ",       ": ",
                                           "\n  ",     "  ",
                                           "\t",       "\\u",
                                           "\\n",      "\\\"",
                                           "00",       "12",
                                           "-1",       "e5",
                                           ".5",       "1.0",
                                           "name",     "id",
                                           "a",        "0",
                                           "\xE4\xB8", "\xAD",
                                           "\xC3\xA9", "\xF0\x9F\x98\x80",
                                           "\xF0\x9F", "\x98\x80\"",
                                           "d83d",     "\\ud83d\\ude00",
                                           "\"\"",     "{}",
                                           "[]",       ",\"",
                                           "\xE9"};
  for (int i = 0; i < 400; ++i) {
    std::string t;
    const int parts = 1 + static_cast<int>(rng() % 3);
    for (int p = 0; p < parts; ++p) t += pieces[rng() % pieces.size()];
    v.emplace_back(t);
  }
  for (int i = 0; i < 5; ++i) v.emplace_back(std::nullopt);  // special tokens
  return v;
}

TEST(TokenMask, EqualsBruteForce) {
  SEEDED_RNG(rng);
  const TokenVocabulary vocab(random_vocabulary(rng));
  const int32_t n = vocab.size();
  const std::vector<int32_t> stops = {n - 1, n - 3};  // two of the special ids stop
  TokenMasker masker(vocab);
  std::ifstream in(std::string(CTXPAR_FIXTURES_DIR) + "/structured/json_schema_cases.json");
  const ordered_json cases = ordered_json::parse(in)["cases"];
  std::vector<uint32_t> mask(mask_words(n) + 1);
  int64_t states = 0, ends = 0, allowed_total = 0;
  for (const ordered_json& c : cases) {
    const auto a = testing::automaton_of_json(c["schema"]);
    for (const ordered_json& d : c["docs"]) {
      if (!d["canonical"].get<bool>()) continue;
      const std::string text = d["text"];
      StateSet s = a->initial();
      StateSet next;
      // A few random cut points along the document, and its end.
      for (size_t at = 0; at <= text.size(); ++at) {
        if (at == text.size() || rng() % 9 == 0) {
          masker.fill(*a, s, stops, mask);
          ++states;
          const bool can_end = a->can_end(s);
          const bool must_end = a->must_end(s);
          ends += can_end;
          for (int32_t t = 0; t < n; ++t) {
            bool expect = false;
            if (std::find(stops.begin(), stops.end(), t) != stops.end()) {
              expect = can_end;
            } else if (vocab.bytes(t) && !must_end) {
              StateSet cur = s;  // a fresh copy of the matcher state
              expect = true;
              for (const char ch : *vocab.bytes(t)) {
                if (!a->advance(cur, static_cast<uint8_t>(ch), next)) {
                  expect = false;
                  break;
                }
                std::swap(cur, next);
              }
            }
            ASSERT_EQ(mask_allows(mask, t), expect)
                << "token " << t << " '" << vocab.bytes(t).value_or("<special>") << "' after '"
                << text.substr(0, at) << "' of " << c["schema"].dump();
            allowed_total += expect;
          }
          EXPECT_EQ(mask.back(), 0u);  // nothing past the vocabulary
        }
        if (at < text.size()) {
          ASSERT_TRUE(a->advance(s, static_cast<uint8_t>(text[at]), next));
          std::swap(s, next);
        }
      }
    }
  }
  EXPECT_GT(states, 1000);
  EXPECT_GT(ends, 300);
  EXPECT_GT(allowed_total, states);  // masks are neither all empty nor trivial
}

TEST(TokenMask, WholeObjectAllowsOnlyStops) {
  const auto a = testing::automaton_of(R"({"type": "object"})");
  const TokenVocabulary vocab({std::string("{"), std::string("}"), std::string(" "), std::nullopt});
  TokenMasker masker(vocab);
  std::vector<uint32_t> mask(1);
  JsonMatcher m(a);
  EXPECT_EQ(masker.fill(*a, m.state(), std::vector<int32_t>{3}, mask), 1);
  EXPECT_TRUE(mask_allows(mask, 0));
  ASSERT_TRUE(m.accept("{"));
  EXPECT_EQ(masker.fill(*a, m.state(), std::vector<int32_t>{3}, mask), 2);  // "}" and " "
  ASSERT_TRUE(m.accept("}"));
  EXPECT_EQ(masker.fill(*a, m.state(), std::vector<int32_t>{3}, mask), 1);
  EXPECT_TRUE(mask_allows(mask, 3));  // complete: the stop token alone
}

}  // namespace
}  // namespace ctxpar::structured
