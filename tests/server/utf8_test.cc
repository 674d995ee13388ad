// Valid UTF-8 from arbitrary bytes: Python's errors="replace" results for the classic cases,
// held-back incomplete sequences, and pieces that always concatenate to the whole.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "ctxpar/server/utf8.h"

namespace ctxpar::server {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, ReplacesEachMaximalInvalidSubpartAsPythonDoes) {
  // Expected values are bytes.decode("utf-8", "replace") of the inputs.
  EXPECT_EQ(valid_utf8("plain ascii"), "plain ascii");
  EXPECT_EQ(valid_utf8("\xE2\x82\xAC \xF0\x9F\x98\x80"), "\xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(valid_utf8("\xFF"), kFffd);
  EXPECT_EQ(valid_utf8("a\x80z"), "a" + kFffd + "z");
  EXPECT_EQ(valid_utf8("\xE2\x82"), kFffd);                                  // truncated: one
  EXPECT_EQ(valid_utf8("\xE2\x28\xA1"), kFffd + "(" + kFffd);                // bad 2nd byte
  EXPECT_EQ(valid_utf8("\xC0\xAF"), kFffd + kFffd);                          // overlong lead
  EXPECT_EQ(valid_utf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);              // surrogate
  EXPECT_EQ(valid_utf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  EXPECT_EQ(valid_utf8("\xF0\x90\x80"), kFffd);                              // truncated 4-byte
  EXPECT_EQ(valid_utf8("\xF0\x90\x80"
                       "A"),
            kFffd + "A");
}

TEST(Utf8, HoldsBackWhatLaterBytesCouldComplete) {
  std::string out;
  EXPECT_EQ(append_valid_utf8("ab\xE2\x82", false, out), 2u);
  EXPECT_EQ(out, "ab");
  EXPECT_EQ(append_valid_utf8("\xE2\x82\xAC", false, out), 3u);
  EXPECT_EQ(out, "ab\xE2\x82\xAC");
  out.clear();
  EXPECT_EQ(append_valid_utf8("\xF0\x9F", false, out), 0u);
  EXPECT_EQ(out, "");
  // An invalid byte is replaced at once: no later byte can make it valid.
  EXPECT_EQ(append_valid_utf8("\xBF\xF0", false, out), 1u);
  EXPECT_EQ(out, kFffd);
}

TEST(Utf8, PiecesConcatenateToTheWhole) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string bytes;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      // Mostly the bytes that make multi-byte sequences, valid or not.
      const uint32_t kind = rng() % 4;
      bytes += static_cast<char>(kind == 0 ? rng() % 128 : 0x80 + rng() % 128);
    }
    std::string streamed, pending;
    size_t at = 0;
    while (at < bytes.size()) {
      const size_t take = 1 + rng() % 4;
      pending += bytes.substr(at, take);
      at += take;
      pending.erase(0, append_valid_utf8(pending, false, streamed));
    }
    append_valid_utf8(pending, true, streamed);
    ASSERT_EQ(streamed, valid_utf8(bytes)) << "trial " << trial;
    // The result is valid: sanitizing it again changes nothing.
    ASSERT_EQ(valid_utf8(streamed), streamed);
  }
}

TEST(Utf8, CountsCodePoints) {
  EXPECT_EQ(utf8_length("a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"), 4u);
  EXPECT_EQ(utf8_offset_of_last("a\xC3\xA9\xE2\x82\xAC", 2), 1u);
  EXPECT_EQ(utf8_offset_of_last("ab", 5), 0u);
  EXPECT_EQ(utf8_offset_of_last("ab", 0), 2u);
}

}  // namespace
}  // namespace ctxpar::server
