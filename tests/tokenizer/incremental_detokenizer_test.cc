// Streaming detokenization against whole decodes, for every fixture and the byte tokenizer,
// at random prompt/output splits: each piece is whole UTF-8 characters and the pieces add up
// to the text the output adds to the prompt.
#include "ctxpar/tokenizer/incremental_detokenizer.h"

#include <gtest/gtest.h>

#include <random>

#include "ctxpar/tokenizer/byte_tokenizer.h"
#include "ctxpar/tokenizer/tokenizer_files.h"
#include "ctxpar/tokenizer/utf8.h"
#include "tokenizer/fixture_goldens.h"

namespace ctxpar::tokenizer {
namespace {

struct StreamResult {
  std::string text;
  bool pieces_whole = true;  // every piece before finish() was valid UTF-8 without a U+FFFD end
};

StreamResult stream(const Tokenizer& tok, std::span<const int32_t> prompt,
                    std::span<const int32_t> output, bool skip) {
  IncrementalDetokenizer detok(tok, prompt, skip);
  StreamResult r;
  for (const int32_t id : output) {
    const std::string piece = detok.add(id);
    r.pieces_whole = r.pieces_whole && utf8::is_valid(piece) &&
                     !piece.ends_with(utf8::kReplacementUtf8) &&
                     utf8::unfinished_suffix(piece) == 0;
    r.text += piece;
  }
  r.text += detok.finish();
  EXPECT_EQ(detok.text(), r.text);
  return r;
}

// What `output` adds to the text of `prompt`, when decoding the prompt gives a prefix of
// decoding both (false when the last prompt tokens only make sense with the output).
bool added_text(const Tokenizer& tok, std::span<const int32_t> prompt,
                std::span<const int32_t> output, bool skip, std::string& out) {
  std::vector<int32_t> all(prompt.begin(), prompt.end());
  all.insert(all.end(), output.begin(), output.end());
  const std::string before = tok.decode(prompt, skip), after = tok.decode(all, skip);
  if (!after.starts_with(before)) return false;
  out = after.substr(before.size());
  return true;
}

class Detokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(Detokenizer, PiecesAddUpToWholeDecodeAtRandomSplits) {
  const test::FixtureGoldens g = test::load_goldens(GetParam());
  const LoadedTokenizer t = load_hf_tokenizer(g.dir, "");
  std::mt19937_64 rng(std::random_device{}());
  int compared = 0, cases = 0;
  for (const auto& c : g.encode) {
    for (int rep = 0; rep < 3; ++rep) {
      const std::span<const int32_t> ids(c.ids);
      const size_t split = ids.empty() ? 0 : rng() % (ids.size() + 1);
      const bool skip = rng() % 2 == 0;
      const auto prompt = ids.first(split), output = ids.subspan(split);
      const StreamResult r = stream(*t.tokenizer, prompt, output, skip);
      ++cases;
      EXPECT_TRUE(r.pieces_whole) << c.text << " split " << split << " skip " << skip;
      std::string want;
      if (added_text(*t.tokenizer, prompt, output, skip, want)) {
        EXPECT_EQ(r.text, want) << "text: " << c.text << " split " << split;
        ++compared;
      }
      if (split == 0) {
        EXPECT_EQ(r.text, t.tokenizer->decode(output, skip)) << c.text;
      }
    }
    // No prompt at all: the stream is decode(output).
    EXPECT_EQ(stream(*t.tokenizer, {}, c.ids, true).text, c.decoded);
  }
  // The prefix property fails only where a split cuts a character (a minority of cases; it
  // varies with the random splits, so the bound is loose).
  EXPECT_GT(compared, cases / 2);
}

// Random ids (broken characters included). A byte-fallback run that is not UTF-8 as a whole
// decodes to one U+FFFD per byte in a whole decode, even its valid first characters, which a
// stream has released already: the texts agree whenever the whole decode has no U+FFFD.
TEST_P(Detokenizer, RandomIdSequences) {
  const test::FixtureGoldens g = test::load_goldens(GetParam());
  const LoadedTokenizer t = load_hf_tokenizer(g.dir, "");
  int compared = 0;
  for (const auto& c : g.decode) {
    for (const bool skip : {true, false}) {
      const StreamResult r = stream(*t.tokenizer, {}, c.ids, skip);
      const std::string& whole = skip ? c.text : c.text_with_special;
      EXPECT_TRUE(r.pieces_whole);
      EXPECT_TRUE(utf8::is_valid(r.text));
      if (whole.find(utf8::kReplacementUtf8) == std::string::npos) {
        EXPECT_EQ(r.text, whole) << ::testing::PrintToString(c.ids);
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Detokenizer, ::testing::ValuesIn(test::fixture_names()),
                         [](const auto& p) { return p.param; });

TEST(Detokenizer, MetaspaceTokenAfterPromptKeepsItsSpace) {
  // "▁world" after a prompt is " world" (vLLM), though decode alone strips a leading space.
  const std::string dir = std::string(CTXPAR_FIXTURES_DIR) + "/tokenizers/llama2";
  const LoadedTokenizer t = load_hf_tokenizer(dir, "");
  const std::vector<int32_t> prompt = t.tokenizer->encode("hello", true);
  const std::vector<int32_t> all = t.tokenizer->encode("hello world", true);
  ASSERT_GT(all.size(), prompt.size());
  ASSERT_TRUE(std::equal(prompt.begin(), prompt.end(), all.begin()));
  const std::span<const int32_t> output = std::span<const int32_t>(all).subspan(prompt.size());
  EXPECT_EQ(stream(*t.tokenizer, prompt, output, true).text, " world");
  EXPECT_EQ(t.tokenizer->decode(output, true), "world");
}

TEST(Detokenizer, ByteTokenizerHoldsSplitCharacters) {
  const ByteTokenizer tok(512, 256);
  const std::string text = "a\xE4\xBD\xA0\xF0\x9F\x91\x8D!";  // a你👍!
  std::vector<int32_t> ids;
  for (const char c : text) ids.push_back(static_cast<unsigned char>(c));
  IncrementalDetokenizer detok(tok, std::vector<int32_t>{256, 'x'});
  std::vector<std::string> pieces;
  for (const int32_t id : ids) pieces.push_back(detok.add(id));
  EXPECT_EQ(pieces, (std::vector<std::string>{"a", "", "", "\xE4\xBD\xA0", "", "", "",
                                              "\xF0\x9F\x91\x8D", "!"}));
  EXPECT_EQ(detok.finish(), "");
  // A character cut off by the end of the generation is released by finish().
  IncrementalDetokenizer cut(tok, {});
  EXPECT_EQ(cut.add(0xE4), "");
  EXPECT_EQ(cut.finish(), "\xE4");
}

// A model's vocabulary can be larger than its tokenizer's (padded embedding rows): such ids
// add no text, as `tokenizers` decodes them to nothing.
TEST(Detokenizer, IdsOutsideTheVocabularyAddNoText) {
  const ByteTokenizer tok(300);
  IncrementalDetokenizer detok(tok, std::vector<int32_t>{'a', 300, 'b'});
  EXPECT_EQ(detok.add('x'), "x");
  EXPECT_EQ(detok.add(300), "");
  EXPECT_EQ(detok.add(-1), "");
  EXPECT_EQ(detok.add('y'), "y");
  EXPECT_EQ(detok.finish(), "");
  EXPECT_EQ(detok.text(), "xy");
}

}  // namespace
}  // namespace ctxpar::tokenizer
