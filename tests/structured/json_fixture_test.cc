// The matcher against a reference nobody here wrote: random schemas and documents classified by
// Python's `jsonschema` (tools/make_structured_fixtures.py). A document must be accepted exactly
// when jsonschema calls it valid and it follows the xgrammar generation rules ("canonical").
// Then, on the same schemas with fresh random draws: byte mutations that break the JSON are
// refused, and random walks through the matcher produce JSON that parses.
#include <gtest/gtest.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "structured/match_util.h"
#include "support/seeded_rng.h"

namespace ctxpar::structured {
namespace {

using nlohmann::ordered_json;
using testing::accepts;
using testing::automaton_of_json;
using testing::random_walk;

// nlohmann refuses numbers beyond double's range, which JSON allows: the walk's exponents are cut
// to one digit (outside strings) before the syntax check.
std::string tame_exponents(const std::string& text) {
  std::string out;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    out.push_back(c);
    if (in_string) {
      if (c == '\\') {
        out.push_back(text[++i]);
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if ((c == 'e' || c == 'E') && i > 0 &&
               std::isdigit(static_cast<unsigned char>(text[i - 1]))) {
      if (i + 1 < text.size() && (text[i + 1] == '+' || text[i + 1] == '-'))
        out.push_back(text[++i]);
      if (i + 1 < text.size()) out.push_back(text[++i]);
      while (i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]))) ++i;
    }
  }
  return out;
}

// JSON (and Python, and xgrammar) take lone surrogate escapes; nlohmann does not. Every escaped
// surrogate becomes \u0041 before nlohmann's syntax check.
std::string without_surrogates(const std::string& text) {
  std::string out;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string && c == '\\' && i + 1 < text.size()) {
      if (text[i + 1] == 'u' && i + 5 < text.size() && (text[i + 2] == 'd' || text[i + 2] == 'D') &&
          std::strchr("89abcdefABCDEF", text[i + 3]) != nullptr && text[i + 3] != 0) {
        out += "\\u0041";
        i += 5;
      } else {
        out.push_back(c);
        out.push_back(text[++i]);
      }
      continue;
    }
    if (c == '"') in_string = !in_string;
    out.push_back(c);
  }
  return out;
}

// Whether nlohmann sees JSON, overlooking the two places where it is stricter than JSON.
bool is_json(const std::string& text) {
  return ordered_json::accept(tame_exponents(without_surrogates(text)));
}

const ordered_json& cases() {
  static const ordered_json c = [] {
    std::ifstream in(std::string(CTXPAR_FIXTURES_DIR) + "/structured/json_schema_cases.json");
    return ordered_json::parse(in)["cases"];
  }();
  return c;
}

TEST(JsonSchemaFixture, AcceptsExactlyTheValidCanonicalDocuments) {
  ASSERT_GE(cases().size(), 100u);
  int valid = 0, invalid = 0, non_canonical = 0;
  for (size_t i = 0; i < cases().size(); ++i) {
    const ordered_json& c = cases()[i];
    const auto a = automaton_of_json(c["schema"]);
    for (const ordered_json& d : c["docs"]) {
      const std::string text = d["text"];
      const bool expect = d["valid"].get<bool>() && d["canonical"].get<bool>();
      EXPECT_EQ(accepts(*a, text), expect)
          << "case " << i << " schema " << c["schema"].dump() << "\ndocument " << text
          << "\njsonschema valid " << d["valid"] << ", canonical " << d["canonical"];
      (d["valid"].get<bool>() ? (expect ? valid : non_canonical) : invalid) += 1;
    }
  }
  // The fixture exercises both sides.
  EXPECT_GT(valid, 500);
  EXPECT_GT(invalid, 500);
}

// Valid documents with one byte changed, inserted or removed: whenever the result is not JSON at
// all, the matcher must refuse it.
TEST(JsonSchemaFixture, RefusesBrokenMutations) {
  SEEDED_RNG(rng);
  const std::string alphabet = "{}[]:,\" \n\t\\-+.eE0123456789aZtfnul\r\x01\xC3\xA9\xFF";
  int refused = 0;
  for (const ordered_json& c : cases()) {
    const auto a = automaton_of_json(c["schema"]);
    for (const ordered_json& d : c["docs"]) {
      if (!d["canonical"].get<bool>()) continue;
      std::string text = d["text"];
      for (int k = 0; k < 4; ++k) {
        std::string m = text;
        const size_t at = rng() % (m.size() + 1);
        const char ch = alphabet[rng() % alphabet.size()];
        switch (rng() % 3) {
          case 0:
            m.insert(m.begin() + static_cast<std::ptrdiff_t>(at), ch);
            break;
          case 1:
            if (at < m.size()) m[at] = ch;
            break;
          default:
            if (at < m.size()) m.erase(at, 1);
        }
        if (is_json(m)) continue;  // still JSON: the fixture judges semantics
        // nlohmann allows what xgrammar's grammar does not (\r, outer spaces), never the reverse.
        EXPECT_FALSE(accepts(*a, m)) << c["schema"].dump() << "\n" << m;
        ++refused;
      }
    }
  }
  EXPECT_GT(refused, 1000);
}

// Random walks: from each state pick a random byte the matcher takes (closing ones once the text
// is long) until it may end. Whatever the matcher lets through must be JSON.
TEST(JsonSchemaFixture, RandomWalksAreJson) {
  SEEDED_RNG(rng);
  int walks = 0;
  for (const ordered_json& c : cases()) {
    const auto a = automaton_of_json(c["schema"]);
    for (int w = 0; w < 3; ++w) {
      SCOPED_TRACE(c["schema"].dump());
      const std::optional<std::string> text = random_walk(*a, rng, "\"}],0", 60, 4, 600);
      if (!text) continue;
      ++walks;
      EXPECT_TRUE(is_json(*text)) << *text;
      EXPECT_TRUE(accepts(*a, *text));
    }
  }
  EXPECT_GT(walks, 300);
}

}  // namespace
}  // namespace ctxpar::structured
