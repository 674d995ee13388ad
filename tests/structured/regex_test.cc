// Regex automata (regex_parser.h, byte_dfa.h, string_formats.h) against xgrammar, the backend
// vLLM uses: regexes, schema patterns and formats with texts xgrammar classified
// (tools/make_regex_fixtures.py). Then, with fresh random draws: code point ranges encode exactly
// their code points, random walks never get stuck and give valid UTF-8 (raw) or JSON strings
// (patterns), and refused patterns name what is wrong.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "ctxpar/core/error.h"
#include "ctxpar/engine/structured/byte_dfa.h"
#include "ctxpar/engine/structured/string_formats.h"
#include "ctxpar/tokenizer/utf8.h"
#include "structured/match_util.h"
#include "support/seeded_rng.h"

namespace ctxpar::structured {
namespace {

using nlohmann::ordered_json;
using testing::accepts;
using testing::automaton_of_json;
using testing::random_walk;

const ordered_json& fixture() {
  static const ordered_json f = [] {
    std::ifstream in(std::string(CTXPAR_FIXTURES_DIR) + "/structured/regex_cases.json");
    return ordered_json::parse(in);
  }();
  return f;
}

JsonAutomaton regex_automaton(const std::string& pattern) {
  return JsonAutomaton(std::make_shared<Grammar>(regex_grammar(pattern)));
}

std::string utf8(uint32_t c) {
  std::string s;
  tokenizer::utf8::append(s, static_cast<char32_t>(c));
  return s;
}

TEST(RegexFixture, RawTextAsXgrammarClassifiesIt) {
  const ordered_json& cases = fixture()["regex"];
  ASSERT_GE(cases.size(), 100u);
  int matches = 0, misses = 0;
  for (const ordered_json& c : cases) {
    const std::string pattern = c["regex"];
    const JsonAutomaton a = regex_automaton(pattern);
    for (const ordered_json& t : c["texts"]) {
      const std::string text = t[0];
      const bool expect = t[1];
      EXPECT_EQ(accepts(a, text), expect)
          << "regex " << pattern << " text " << ordered_json(text).dump() << " ("
          << c["reference"].get<std::string>() << ")";
      (expect ? matches : misses) += 1;
    }
  }
  EXPECT_GT(matches, 500);
  EXPECT_GT(misses, 500);
}

TEST(RegexFixture, SchemaPatternMatchesTheDecodedString) {
  for (const ordered_json& c : fixture()["pattern"]) {
    const std::string pattern = c["pattern"];
    const auto a = automaton_of_json({{"type", "string"}, {"pattern", pattern}});
    for (const ordered_json& t : c["texts"]) {
      const std::string text = fmt::format("\"{}\"", t[0].get<std::string>());
      EXPECT_EQ(accepts(*a, text), t[1].get<bool>()) << "pattern " << pattern << " text " << text;
    }
  }
}

TEST(RegexFixture, FormatsAsXgrammarClassifiesThem) {
  const ordered_json& cases = fixture()["format"];
  ASSERT_EQ(cases.size(), 14u);
  for (const ordered_json& c : cases) {
    const std::string format = c["format"];
    ASSERT_TRUE(format_regex(format).has_value()) << format;
    const auto a = automaton_of_json({{"type", "string"}, {"format", format}});
    int valid = 0;
    for (const ordered_json& t : c["texts"]) {
      const std::string text = fmt::format("\"{}\"", t[0].get<std::string>());
      EXPECT_EQ(accepts(*a, text), t[1].get<bool>()) << "format " << format << " text " << text;
      valid += t[1].get<bool>() ? 1 : 0;
    }
    EXPECT_GT(valid, 0) << format;
  }
}

// [lo-hi] over random ranges: exactly the code points inside, probed at the ends, just outside
// and at random, including where the UTF-8 length changes.
TEST(Regex, RangesEncodeExactlyTheirCodePoints) {
  SEEDED_RNG(rng);
  const std::vector<uint32_t> edges = {0,      1,       0x7E,    0x7F,    0x80,    0x7FF,
                                       0x800,  0xFFF,   0x1000,  0xD7FF,  0xE000,  0xFFFD,
                                       0xFFFF, 0x10000, 0x3FFFF, 0x40000, 0x10FFFF};
  const auto draw = [&] {
    const uint32_t c =
        rng() % 3 == 0 ? edges[rng() % edges.size()] : static_cast<uint32_t>(rng() % 0x110000);
    return c >= 0xD800 && c <= 0xDFFF ? 0xE000 : c;
  };
  for (int trial = 0; trial < 40; ++trial) {
    uint32_t lo = draw(), hi = draw();
    if (lo > hi) std::swap(lo, hi);
    const std::string pattern = fmt::format("[\\U{:08x}-\\U{:08x}]", lo, hi);
    const JsonAutomaton a = regex_automaton(pattern);
    std::vector<uint32_t> probes = {lo, hi, lo - 1, hi + 1};
    for (const uint32_t e : edges) probes.push_back(e);
    for (int k = 0; k < 20; ++k) probes.push_back(draw());
    for (const uint32_t c : probes) {
      if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) continue;
      EXPECT_EQ(accepts(a, utf8(c)), c >= lo && c <= hi) << pattern << " U+" << std::hex << c;
    }
    // Surrogates and overlong forms are never UTF-8.
    EXPECT_FALSE(accepts(a, "\xED\xA0\x80"));
    EXPECT_FALSE(accepts(a, "\xC0\x80"));
  }
}

// From each reachable state a random allowed byte, until the automaton may end: it never gets
// stuck, and what it lets through is UTF-8 (raw) or the inside of a JSON string (patterns).
// Past 64 bytes the walk prefers the pattern's own characters and the closing quote, so that
// patterns like `.*end` end too.
TEST(Regex, RandomWalksEndAndStayWellFormed) {
  SEEDED_RNG(rng);
  int walks = 0;
  for (const ordered_json& c : fixture()["regex"]) {
    const std::string pattern = c["regex"];
    for (const bool json_string : {false, true}) {
      const auto a =
          json_string
              ? automaton_of_json({{"type", "string"}, {"pattern", pattern}})
              : std::make_shared<JsonAutomaton>(std::make_shared<Grammar>(regex_grammar(pattern)));
      for (int w = 0; w < 4; ++w) {
        SCOPED_TRACE(pattern);
        const std::optional<std::string> text =
            random_walk(*a, rng, fmt::format("\"{}", pattern), 64, 3, 2000);
        if (!text) continue;
        ++walks;
        EXPECT_TRUE(tokenizer::utf8::is_valid(*text));
        if (json_string) {
          EXPECT_TRUE(ordered_json::parse(*text, nullptr, false).is_string()) << *text;
        } else {
          EXPECT_TRUE(accepts(*a, *text));
        }
      }
    }
  }
  EXPECT_GT(walks, 700);
}

TEST(Regex, RefusedPatternsSayWhatAndWhere) {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"a(?=b)", "lookaround"},
      {"(a)\\1", "backreference"},
      {"(?P<x>a)(?P=x)", "backreference"},
      {"\\bword", "word boundary"},
      {"(?i)abc", "inline flag"},
      {"a^b", "'^' anywhere but at the start"},
      {"a$b", "'$' anywhere but at the end"},
      {"(ab", "missing )"},
      {"ab)", "unbalanced parenthesis"},
      {"[ab", "unterminated character set"},
      {"[z-a]", "bad character range"},
      {"\\q", "bad escape \\q"},
      {"*a", "nothing to repeat"},
      {"a**", "multiple repeat"},
      {"a{1001}", "repetition count above 1000"},
      {"a{3,2}", "min repeat greater than max repeat"},
      {"[^\\s\\S]", "matches no text"},
      {"\\x4", "incomplete escape"},
      {"a\xFF", "not valid UTF-8"},
      {"a\\ud800", "surrogate escape"},
      {"[\\ud800-\\udfff]", "matches no text"},
      {"((((((((a{1000}){1000})))))))", "too large"},
      {"(a|b)*a(a|b){20}", "too complex"},  // 2^21 DFA states
      {std::string(100000, '(') + "a" + std::string(100000, ')'), "nested deeper than 200"},
  };
  for (const auto& [pattern, message] : refused) {
    try {
      (void)regex_grammar(pattern);
      ADD_FAILURE() << pattern << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos)
          << pattern << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("regex"), std::string::npos) << e.what();
    }
  }
  // In a schema the error names the keyword and where it is.
  try {
    (void)compile_json_schema(
        ordered_json::parse(R"({"properties": {"a": {"type": "string", "pattern": "(a"}}})"));
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/properties/a"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("`pattern` \"(a\""), std::string::npos) << e.what();
  }
}

TEST(Regex, SchemaKeywordsFollowXgrammar) {
  // An unknown format is any string.
  EXPECT_TRUE(accepts(R"({"type": "string", "format": "not-a-format"})", R"("anything")"));
  // A known format wins over a pattern.
  EXPECT_TRUE(
      accepts(R"({"type": "string", "format": "date", "pattern": "x+"})", R"("2024-05-06")"));
  EXPECT_FALSE(accepts(R"({"type": "string", "format": "date", "pattern": "x+"})", R"("xx")"));
  // With a pattern, the lengths are ignored.
  EXPECT_TRUE(accepts(R"({"type": "string", "pattern": "a+", "maxLength": 2})", R"("aaaa")"));
  // The escapes a pattern's JSON text uses are json.dumps's.
  const auto quotes = testing::automaton_of(R"({"type": "string", "pattern": "[\"\\\\\\n]+"})");
  EXPECT_TRUE(accepts(*quotes, R"("\"\\\n")"));
  EXPECT_FALSE(accepts(*quotes, "\"\n\""));
  EXPECT_FALSE(accepts(*quotes, R"("\u000a")"));
  EXPECT_THROW(
      (void)compile_json_schema(ordered_json::parse(R"({"type": "string", "pattern": 5})")),
      InputError);
}

// Long counted runs of multi-byte classes stay within the limits (byte classes keep the
// transition table small).
TEST(Regex, LongRunsCompile) {
  for (const char* pattern : {".{0,1000}", "[^a]{1000}", "\\w{1000}@\\w{1000}", "(.*a){50}"}) {
    for (const RegexText text : {RegexText::kRaw, RegexText::kJsonString}) {
      const ByteDfa dfa = compile_regex(pattern, text);
      EXPECT_GT(dfa.size(), 1000) << pattern;
    }
  }
  const JsonAutomaton a = regex_automaton(".{0,1000}");
  EXPECT_TRUE(accepts(a, std::string(1000, 'x')));
  EXPECT_FALSE(accepts(a, std::string(1001, 'x')));
  std::string wide;
  for (int i = 0; i < 1000; ++i) wide += i % 2 == 0 ? "\xF0\x9F\x98\x80" : "\xC3\xA9";
  EXPECT_TRUE(accepts(a, wide));
  EXPECT_FALSE(accepts(a, wide + "a"));
}

TEST(Regex, TopLevelRegexEndsWhenNothingCanFollow) {
  const JsonAutomaton a = regex_automaton("(yes|no)!?");
  StateSet s = a.initial();
  StateSet next;
  for (const char c : std::string("no")) {
    ASSERT_TRUE(a.advance(s, static_cast<uint8_t>(c), next));
    std::swap(s, next);
  }
  EXPECT_TRUE(a.can_end(s));
  EXPECT_FALSE(a.must_end(s));
  ASSERT_TRUE(a.advance(s, '!', next));
  EXPECT_TRUE(a.must_end(next));
  // The empty pattern matches only the empty text.
  const JsonAutomaton empty = regex_automaton("");
  EXPECT_TRUE(empty.must_end(empty.initial()));
}

}  // namespace
}  // namespace ctxpar::structured
