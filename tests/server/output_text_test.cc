// OutputText: streamed text equals the whole decode, multi-byte characters wait for their last
// byte, invalid bytes become U+FFFD, and stop strings match across token boundaries with
// vLLM's rules (cut before or after the string, the token that completed it counts last,
// min_tokens), against a direct reference over random byte outputs split at random points.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "ctxpar/server/output_text.h"
#include "ctxpar/server/valid_text_tokenizer.h"
#include "ctxpar/tokenizer/byte_tokenizer.h"
#include "ctxpar/tokenizer/utf8.h"
#include "support/seeded_rng.h"

namespace ctxpar::server {
namespace {

using tokenizer::utf8::repair;

std::vector<int32_t> bytes_of(const std::string& s) {
  std::vector<int32_t> ids;
  for (const unsigned char c : s) ids.push_back(c);
  return ids;
}

const tokenizer::ByteTokenizer kBytes(512, 256);
const ValidTextTokenizer kTokenizer(kBytes);  // as the server decodes
const std::vector<int32_t> kPrompt = {256, 'h', 'i'};

TEST(OutputText, StreamsWholeCharacters) {
  OutputText text(kTokenizer, kPrompt, {}, true);
  EXPECT_EQ(text.add(bytes_of("h\xC3"), false).text, "h");  // é waits for its second byte
  EXPECT_EQ(text.add(bytes_of("\xA9!"), false).text, "\xC3\xA9!");
  EXPECT_EQ(text.add(std::vector<int32_t>{257}, false).text, "");  // a special token, skipped
  EXPECT_EQ(text.add(bytes_of("a\x80z"), false).text, "a\xEF\xBF\xBDz");  // an invalid byte
  const OutputText::Delta last = text.add(bytes_of("\xE2\x82"), true);
  EXPECT_EQ(last.text, "\xEF\xBF\xBD");  // the request ended inside a character
  EXPECT_EQ(last.num_tokens, 10);
  EXPECT_FALSE(last.stop_string.has_value());
  EXPECT_EQ(text.text(), "h\xC3\xA9!a\xEF\xBF\xBDz\xEF\xBF\xBD");

  OutputText specials(kTokenizer, kPrompt, {}, false);
  EXPECT_EQ(specials.add(std::vector<int32_t>{104, 257}, true).text, "h<|257|>");
}

// The EOS or stop token that ended a request counts but is not shown, even with
// skip_special_tokens off, unless include_stop_str_in_output (vLLM's detokenizer); a request
// that ended otherwise shows its last token.
TEST(OutputText, TheTokenThatEndedTheRequestIsNotShown) {
  for (const bool include : {false, true}) {
    SCOPED_TRACE(include ? "include" : "leave out");
    OutputText text(kTokenizer, kPrompt, {{}, include, 0}, false);
    EXPECT_EQ(text.add(bytes_of("ok"), false).text, "ok");
    const OutputText::Delta last = text.add(std::vector<int32_t>{'!', 257}, true, true);
    EXPECT_EQ(last.text, include ? "!<|257|>" : "!");
    EXPECT_EQ(last.num_tokens, 4);
    OutputText stop_id(kTokenizer, kPrompt, {{}, include, 0}, true);
    EXPECT_EQ(stop_id.add(bytes_of("ab"), true, true).text, include ? "ab" : "a");
  }
  OutputText length(kTokenizer, kPrompt, {}, false);
  EXPECT_EQ(length.add(std::vector<int32_t>{'!', 257}, true).text, "!<|257|>");
}

TEST(OutputText, StopStringsAcrossTokens) {
  for (const bool include : {false, true}) {
    SCOPED_TRACE(include ? "include" : "cut");
    OutputText text(kTokenizer, kPrompt, {{"lo w", "zz"}, include, 0}, true);
    const std::string want = include ? "hello w" : "hel";
    std::string shown;
    const std::vector<int32_t> ids = bytes_of("hello world");
    OutputText::Delta d;
    for (size_t i = 0; i < ids.size() && !d.stop_string; ++i) {
      d = text.add({&ids[i], 1}, false);
      shown += d.text;
      // Nothing past the cut is ever shown, whatever was held back.
      EXPECT_EQ(want.compare(0, shown.size(), shown), 0) << shown;
    }
    ASSERT_TRUE(d.stop_string.has_value());
    EXPECT_EQ(*d.stop_string, "lo w");
    EXPECT_EQ(d.num_tokens, 7);  // "hello w": the token that completed it counts
    EXPECT_EQ(shown, want);
    EXPECT_TRUE(text.stopped());
    const OutputText::Delta after = text.add(bytes_of("orld"), true);
    EXPECT_EQ(after.text, "");  // after the stop: nothing
    EXPECT_EQ(after.num_tokens, 7);
    EXPECT_FALSE(after.stop_string.has_value());  // reported once
  }
}

TEST(OutputText, StopStringsWaitForMinTokens) {
  OutputText text(kTokenizer, kPrompt, {{"ab"}, false, 5}, true);
  const OutputText::Delta d = text.add(bytes_of("abxxxxabzz"), false);
  ASSERT_TRUE(d.stop_string.has_value());
  EXPECT_EQ(d.text, "abxxxx");
  EXPECT_EQ(d.num_tokens, 8);
}

// The reference: after token k the text is the repair of the first k bytes less a trailing
// unfinished character; the first k whose text contains a stop string ends the output there,
// the first such string in list order winning. (An invalid byte's U+FFFD is final only at the
// next token, so stop strings with U+FFFD are left out.)
struct Expected {
  std::string text;
  std::optional<std::string> stop;
  int64_t tokens;
};
Expected reference(const std::string& bytes, const std::vector<std::string>& stops, bool include) {
  for (size_t k = 1; k <= bytes.size(); ++k) {
    const std::string head = bytes.substr(0, k);
    const std::string t = repair(head.substr(0, k - tokenizer::utf8::unfinished_suffix(head)));
    for (const std::string& s : stops) {
      const size_t at = t.find(s);
      if (at == std::string::npos) continue;
      return {t.substr(0, include ? at + s.size() : at), s, static_cast<int64_t>(k)};
    }
  }
  return {repair(bytes), std::nullopt, static_cast<int64_t>(bytes.size())};
}

TEST(OutputText, MatchesTheReferenceForRandomOutputsAndSplits) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const std::string alphabet = "ab \xC3\xA9\xE2\x82\xAC\x80";
  int stopped = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::string bytes;
    for (int i = 0, n = static_cast<int>(rng() % 30); i < n; ++i) {
      bytes += alphabet[rng() % alphabet.size()];
    }
    // Stop strings: pieces of the text (so they occur), or random ones.
    const std::string valid = repair(bytes);
    std::vector<std::string> stops;
    for (int s = 0, n = 1 + static_cast<int>(rng() % 3); s < n; ++s) {
      std::string stop;
      if (!valid.empty() && rng() % 3 != 0) {
        stop = valid.substr(rng() % valid.size(), 1 + rng() % 4);
      } else {
        stop = std::string(1 + rng() % 2, "ab"[rng() % 2]);
      }
      // Whole characters only, as a request's strings are.
      stop = stop.substr(0, stop.size() - tokenizer::utf8::unfinished_suffix(stop));
      if (!stop.empty() && tokenizer::utf8::is_valid(stop) &&
          stop.find(tokenizer::utf8::kReplacementUtf8) == std::string::npos) {
        stops.push_back(stop);
      }
    }
    if (stops.empty()) continue;
    const bool include = rng() % 2 == 0;
    const Expected want = reference(bytes, stops, include);

    OutputText text(kTokenizer, kPrompt, {stops, include, 0}, true);
    const std::vector<int32_t> ids = bytes_of(bytes);
    std::string shown;
    std::optional<std::string> stop;
    int64_t tokens = 0;
    size_t at = 0;
    do {
      const size_t take = std::min(ids.size() - at, size_t{1} + rng() % 3);
      const OutputText::Delta d = text.add({ids.data() + at, take}, at + take == ids.size());
      at += take;
      shown += d.text;
      tokens = d.num_tokens;
      if (d.stop_string) stop = d.stop_string;
    } while (at < ids.size() && !stop);
    SCOPED_TRACE(::testing::Message() << "trial " << trial << " include " << include);
    ASSERT_EQ(stop, want.stop);
    ASSERT_EQ(shown, want.text);
    ASSERT_EQ(tokens, want.tokens);
    stopped += stop.has_value();
  }
  EXPECT_GT(stopped, 500);
}

}  // namespace
}  // namespace ctxpar::server
