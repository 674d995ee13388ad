// The text primitives under the tokenizer: UTF-8 repair (Unicode's maximal-subpart practice,
// which Rust's from_utf8_lossy and Python's "replace" follow), normal forms around ASCII, the
// Oniguruma `\s` translation for PCRE2, and the Rust character classes.
#include <gtest/gtest.h>

#include "ctxpar/core/error.h"
#include "ctxpar/tokenizer/regex.h"
#include "ctxpar/tokenizer/unicode.h"
#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::tokenizer {
namespace {

const std::string kFFFD(utf8::kReplacementUtf8);

TEST(Utf8, RepairReplacesMaximalSubparts) {
  // Unicode 15 §3.9, Table 3-8: one U+FFFD per maximal subpart.
  EXPECT_EQ(utf8::repair("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            "a" + kFFFD + kFFFD + kFFFD + "b" + kFFFD + "c" + kFFFD + kFFFD + "d");
  EXPECT_EQ(utf8::repair("\xC0\xAF"), kFFFD + kFFFD);                          // overlong lead
  EXPECT_EQ(utf8::repair("\xED\xA0\x80"), kFFFD + kFFFD + kFFFD);              // a surrogate
  EXPECT_EQ(utf8::repair("\xF4\x90\x80\x80"), kFFFD + kFFFD + kFFFD + kFFFD);  // > U+10FFFF
  EXPECT_EQ(utf8::repair("\xE4\xBD"), kFFFD);                                  // cut short: one
  EXPECT_EQ(utf8::repair("ok \xE4\xBD\xA0"), "ok \xE4\xBD\xA0");
  EXPECT_TRUE(utf8::is_valid(""));
  EXPECT_FALSE(utf8::is_valid("\xFF"));
}

TEST(Utf8, UnfinishedSuffix) {
  EXPECT_EQ(utf8::unfinished_suffix("a\xE4\xBD"), 2u);
  EXPECT_EQ(utf8::unfinished_suffix("a\xF0\x9F\x91"), 3u);
  EXPECT_EQ(utf8::unfinished_suffix("a\xE4\xBD\xA0"), 0u);
  EXPECT_EQ(utf8::unfinished_suffix("a\xFF"), 0u);  // invalid, not unfinished
  EXPECT_EQ(utf8::unfinished_suffix(""), 0u);
}

TEST(Unicode, NormalFormsAroundAscii) {
  using unicode::NormalForm;
  EXPECT_EQ(unicode::normalize("cafe\xCC\x81!", NormalForm::kNfc), "caf\xC3\xA9!");
  EXPECT_EQ(unicode::normalize("a <\xCC\xB8 b", NormalForm::kNfc), "a \xE2\x89\xAE b");  // ≮
  EXPECT_EQ(unicode::normalize("x\xEF\xAC\x81y", NormalForm::kNfkc), "xfiy");
  EXPECT_EQ(unicode::normalize("\xC3\xA9", NormalForm::kNfd), "e\xCC\x81");
  EXPECT_EQ(unicode::normalize("\xE2\x91\xA0", NormalForm::kNfkd), "1");
  EXPECT_EQ(unicode::normalize("plain ascii", NormalForm::kNfc), "plain ascii");
  // Marks reorder by combining class across the whole run, not per character.
  EXPECT_EQ(unicode::normalize("a\xCC\x81\xCC\xA3", NormalForm::kNfc), "\xE1\xBA\xA1\xCC\x81");
}

TEST(Unicode, RustCharacterClasses) {
  EXPECT_TRUE(unicode::is_whitespace(0x85));
  EXPECT_TRUE(unicode::is_whitespace(0x3000));
  EXPECT_FALSE(unicode::is_whitespace(0x180E));  // not White_Space since Unicode 6.3
  EXPECT_FALSE(unicode::is_whitespace(0x200B));
  EXPECT_TRUE(unicode::is_word(0x301));  // marks are \w in Rust
  EXPECT_TRUE(unicode::is_word(0x200D));
  EXPECT_FALSE(unicode::is_word('-'));
  EXPECT_TRUE(unicode::is_numeric(0x2167));  // Ⅷ (Nl)
  EXPECT_TRUE(unicode::is_numeric(0xB2));    // ² (No)
  EXPECT_TRUE(unicode::is_punctuation('$'));
  EXPECT_TRUE(unicode::is_punctuation('+'));      // a symbol, but ASCII punctuation
  EXPECT_TRUE(unicode::is_punctuation(0x3002));   // 。(Po)
  EXPECT_FALSE(unicode::is_punctuation(0x2260));  // ≠ (Sm)
  EXPECT_EQ(unicode::to_lower("İSTANBUL ΣΑΣ"), "i\xCC\x87stanbul \xCF\x83\xCE\xB1\xCF\x83");
}

TEST(RegexTranslation, WhiteSpaceIsOnigurumas) {
  const Regex ws(R"(\s+)");
  std::vector<Span> spans;
  ws.find_all(
      "a\xE1\xA0\x8E"
      "b \xC2\x85"
      "c",
      spans);  // U+180E is not \s; U+0085 is
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].begin, 5u);
  EXPECT_EQ(spans[0].end, 8u);
  EXPECT_EQ(translate_pattern(R"([^\s\p{L}])"),
            std::string("[^") + R"(\t\n\x{0B}\f\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A})" +
                R"(\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\p{L}])");
  spans.clear();
  const Regex lookahead(R"(\s+(?!\S)|\s+)");
  lookahead.find_all("a   b", spans);
  ASSERT_EQ(spans.size(), 2u);  // "  " then " " before b, as Oniguruma splits it
  EXPECT_EQ(spans[0].end - spans[0].begin, 2u);
  EXPECT_THROW(Regex("(unclosed"), Error);
}

}  // namespace
}  // namespace ctxpar::tokenizer
