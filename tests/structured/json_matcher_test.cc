// The byte-level matcher on hand-picked cases: the odd corners of JSON (empty containers,
// escapes and surrogates, numbers, UTF-8 split across tokens, whitespace) and the xgrammar
// rules ctxpar follows (property order, additionalProperties, prefixItems); and the raw-text
// choice grammar.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "ctxpar/core/error.h"
#include "structured/match_util.h"
#include "support/seeded_rng.h"

namespace ctxpar::structured {
namespace {

using testing::accepts;
using testing::automaton_of;

constexpr const char* kObject = R"({"type": "object"})";
constexpr const char* kString = R"({"type": "string"})";
constexpr const char* kNumber = R"({"type": "number"})";
constexpr const char* kInteger = R"({"type": "integer"})";

TEST(JsonMatcher, EmptyContainers) {
  EXPECT_TRUE(accepts(kObject, "{}"));
  EXPECT_TRUE(accepts(kObject, "{ \n\t}"));
  EXPECT_TRUE(accepts(R"({"type": "array"})", "[]"));
  EXPECT_TRUE(accepts(R"({"type": "array"})", "[ ]"));
  const char* optional = R"({"type": "object", "properties": {"a": {"type": "integer"}}})";
  EXPECT_TRUE(accepts(optional, "{}"));
  const char* required =
      R"({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})";
  EXPECT_FALSE(accepts(required, "{}"));
  EXPECT_TRUE(accepts(required, R"({"a": 1})"));
  // No properties and no additionalProperties given: any object, as xgrammar's basic object.
  EXPECT_TRUE(accepts(kObject, R"({"x": [1, {"y": null}], "z": "w"})"));
}

TEST(JsonMatcher, NestedArrays) {
  const char* s = R"({"type": "array", "items": {"type": "array", "items":
                      {"type": "array", "items": {"type": "integer"}}}})";
  EXPECT_TRUE(accepts(s, "[[[]],[[1,2],[3]],[]]"));
  EXPECT_TRUE(accepts(s, "[ [ [ 1 ] ] ]"));
  EXPECT_FALSE(accepts(s, "[[1]]"));
  EXPECT_FALSE(accepts(s, "[[[1]]"));
  EXPECT_FALSE(accepts(s, "[[[1],]]"));
}

TEST(JsonMatcher, EscapesAndSurrogates) {
  EXPECT_TRUE(accepts(kString, R"("a\n\t\"\\\/\b\f\r\u00e9\uD83D\uDE00")"));
  EXPECT_TRUE(accepts(kString, R"("\ud800")"));  // a lone surrogate: Python's json takes it
  EXPECT_FALSE(accepts(kString, R"("\x41")"));
  EXPECT_FALSE(accepts(kString, R"("\u12G4")"));
  EXPECT_FALSE(accepts(kString, "\"a\x01\""));             // a raw control character
  EXPECT_FALSE(accepts(kString, "\"\xC0\x80\""));          // overlong
  EXPECT_FALSE(accepts(kString, "\"\xED\xA0\x80\""));      // a UTF-8-encoded surrogate
  EXPECT_FALSE(accepts(kString, "\"\xF4\x90\x80\x80\""));  // above U+10FFFF
  EXPECT_TRUE(accepts(kString, "\"\xF0\x9F\x98\x80\xE4\xB8\xAD\""));
  // Lengths count code points, an escaped pair as one (Python's len()).
  const char* one = R"({"type": "string", "maxLength": 1, "minLength": 1})";
  EXPECT_TRUE(accepts(one, R"("\uD83D\uDE00")"));
  EXPECT_TRUE(accepts(one, "\"\xF0\x9F\x98\x80\""));
  EXPECT_TRUE(accepts(one, R"("\uD83D")"));
  EXPECT_FALSE(accepts(one, R"("\uD83D\u0041")"));
  EXPECT_FALSE(accepts(one, R"("ab")"));
  EXPECT_FALSE(accepts(one, R"("")"));
}

TEST(JsonMatcher, Numbers) {
  for (const char* ok :
       {"0", "-0", "1e5", "1E+5", "-1.25e-07", "0.0", "10", "123456789012345678901234"}) {
    EXPECT_TRUE(accepts(kNumber, ok)) << ok;
  }
  for (const char* bad : {"01", "-01", "1.", ".5", "-", "1e", "1e+", "+1", "- 1", "0x1", "1.e3"}) {
    EXPECT_FALSE(accepts(kNumber, bad)) << bad;
  }
  EXPECT_TRUE(accepts(kInteger, "-0"));
  EXPECT_FALSE(accepts(kInteger, "1.0"));
  EXPECT_FALSE(accepts(kInteger, "1e2"));
  const char* bounded = R"({"type": "integer", "minimum": 10, "exclusiveMaximum": 21})";
  EXPECT_TRUE(accepts(bounded, "10"));
  EXPECT_TRUE(accepts(bounded, "20"));
  EXPECT_FALSE(accepts(bounded, "21"));
  EXPECT_FALSE(accepts(bounded, "9"));
  EXPECT_FALSE(accepts(bounded, "-10"));
  // A prefix that no digit can bring into range is refused at once: "3" (30 > 20).
  const auto a = automaton_of(bounded);
  structured::StateSet next;
  EXPECT_FALSE(a->advance(a->initial(), '3', next));
  EXPECT_TRUE(a->advance(a->initial(), '1', next));
  EXPECT_FALSE(a->advance(a->initial(), '-', next));
  // Far past int64: refused, never overflowing (UBSan watches the sanitizer build).
  EXPECT_FALSE(accepts(bounded, "123456789012345678901234567890"));
  EXPECT_FALSE(accepts(R"({"type": "integer", "minimum": 0})", "99999999999999999999"));
  EXPECT_TRUE(accepts(R"({"type": "integer", "minimum": 0})", "9223372036854775807"));
  EXPECT_FALSE(accepts(R"({"type": "number", "minimum": 0})", "1234567890123456789"));
  EXPECT_TRUE(accepts(R"({"type": "number", "minimum": 0})", "123456789012345678"));
  const char* negative = R"({"type": "integer", "maximum": -5})";
  EXPECT_TRUE(accepts(negative, "-5"));
  EXPECT_TRUE(accepts(negative, "-123"));
  EXPECT_FALSE(accepts(negative, "-4"));
  EXPECT_FALSE(accepts(negative, "-0"));
}

TEST(JsonMatcher, BoundedNumbers) {
  // Bounds make a decimal without exponent; the end is checked as Python's float compares.
  const char* non_negative = R"({"type": "number", "minimum": 0})";
  for (const char* ok : {"0", "-0", "0.5", "12.25", "-0.0", "100"}) {
    EXPECT_TRUE(accepts(non_negative, ok)) << ok;
  }
  for (const char* bad : {"-0.5", "-1", "1e5", "-0.01"}) {
    EXPECT_FALSE(accepts(non_negative, bad)) << bad;
  }
  const char* open = R"({"type": "number", "exclusiveMinimum": 0, "maximum": 1.5})";
  for (const char* ok : {"0.1", "1.5", "1", "1.50", "0.000001"})
    EXPECT_TRUE(accepts(open, ok)) << ok;
  for (const char* bad : {"0", "-0", "0.0", "1.51", "2", "-0.1"}) {
    EXPECT_FALSE(accepts(open, bad)) << bad;
  }
  // Prefixes no digit can bring into range are refused at once.
  const auto a = automaton_of(open);
  JsonMatcher m(a);
  EXPECT_FALSE(m.accept("-"));  // (-inf, 0] misses (0, 1.5]
  EXPECT_FALSE(m.accept("2"));  // [2, 3), [20, 30), ...
  EXPECT_TRUE(m.accept("1."));
  EXPECT_FALSE(m.accept("6"));  // 1.6 > 1.5
  EXPECT_TRUE(m.accept("4"));
  EXPECT_TRUE(m.can_end());
}

TEST(JsonMatcher, Utf8SplitAcrossTokens) {
  JsonMatcher m(automaton_of(kString));
  EXPECT_TRUE(m.accept("\"a\xE4"));
  EXPECT_FALSE(m.accept("\x41"));  // not a continuation byte: refused, state kept
  EXPECT_TRUE(m.accept("\xB8"));
  EXPECT_FALSE(m.can_end());
  EXPECT_TRUE(m.accept("\xAD\xF0\x9F"));
  EXPECT_TRUE(m.accept("\x98\x80\""));
  EXPECT_TRUE(m.can_end());
  EXPECT_TRUE(m.must_end());
  m.rollback(2);                 // back inside the 3-byte character
  EXPECT_FALSE(m.accept("\""));  // a quote cannot end it
  EXPECT_TRUE(m.accept("\xAD\""));
  EXPECT_TRUE(m.must_end());
}

TEST(JsonMatcher, WhitespaceAsXgrammar) {
  const char* s = R"({"type": "object", "properties": {"a": {"type": "array"}}})";
  EXPECT_TRUE(accepts(s, "{ \"a\" \n:\t[ 1 , 2 ] }"));
  EXPECT_FALSE(accepts(s, "{\r\"a\": []}"));  // \r is not among xgrammar's whitespace
  EXPECT_FALSE(accepts(s, " {}"));            // nothing before the top-level value
  EXPECT_FALSE(accepts(s, "{} "));            // nor after it
}

TEST(JsonMatcher, CompactWhitespace) {
  // vLLM's disable_any_whitespace: xgrammar's any_whitespace=False, json.dumps' ", " and ": ".
  const auto a = std::make_shared<JsonAutomaton>(std::make_shared<Grammar>(compile_json_schema(
      nlohmann::ordered_json::parse(R"({"type": "object", "properties": {"a": {"type":
      "integer"}, "b": {"type": "array", "items": {"type": "object"}}}})"),
      /*any_whitespace=*/false)));
  EXPECT_TRUE(accepts(*a, R"({"a": 1, "b": [{}, {"x": [1, 2]}]})"));
  EXPECT_TRUE(accepts(*a, "{}"));
  EXPECT_TRUE(accepts(*a, R"({"b": []})"));
  for (const char* bad :
       {R"({"a":1})", R"({"a": 1,"b": []})", R"({ "a": 1})", R"({"a" : 1})", R"({"b": [{},{}]})",
        R"({"b": [ {}]})", R"({"a": 1 })", "{ }", R"({"a":  1})"}) {
    EXPECT_FALSE(accepts(*a, bad)) << bad;
  }
}

TEST(JsonMatcher, PropertiesInSchemaOrder) {
  const char* s = R"({"type": "object", "properties": {"b": {"type": "integer"},
                      "a": {"type": "integer"}, "c": {"type": "integer"}}, "required": ["c"]})";
  EXPECT_TRUE(accepts(s, R"({"b": 1, "a": 2, "c": 3})"));
  EXPECT_TRUE(accepts(s, R"({"a": 2, "c": 3})"));
  EXPECT_TRUE(accepts(s, R"({"c": 3})"));
  EXPECT_FALSE(accepts(s, R"({"a": 2, "b": 1, "c": 3})"));
  EXPECT_FALSE(accepts(s, R"({"b": 1, "b": 1, "c": 3})"));
  EXPECT_FALSE(accepts(s, R"({"b": 1})"));
  // additionalProperties absent beside properties: none (xgrammar's strict mode).
  EXPECT_FALSE(accepts(s, R"({"c": 3, "d": 4})"));
  const char* extra = R"({"type": "object", "properties": {"a": {"type": "integer"}},
                          "additionalProperties": {"type": "string"}})";
  EXPECT_TRUE(accepts(extra, R"({"a": 1, "x": "y", "ab": "z"})"));
  EXPECT_TRUE(accepts(extra, R"({"x": "y"})"));
  EXPECT_FALSE(accepts(extra, R"({"x": 1})"));
  EXPECT_FALSE(accepts(extra, R"({"x": "y", "a": 1})"));  // declared ones come first
}

// minProperties / maxProperties, as xgrammar counts them; a key after which the counts can no
// longer be met is refused at once (the generation would get stuck).
TEST(JsonMatcher, PropertyCounts) {
  const char* two = R"({"properties": {"a": {"type": "integer"}, "b": {"type": "integer"},
                        "c": {"type": "integer"}}, "minProperties": 2, "maxProperties": 2})";
  EXPECT_TRUE(accepts(two, R"({"a": 1, "b": 2})"));
  EXPECT_TRUE(accepts(two, R"({"b": 1, "c": 2})"));
  EXPECT_FALSE(accepts(two, R"({"a": 1})"));
  EXPECT_FALSE(accepts(two, R"({"a": 1, "b": 2, "c": 3})"));
  EXPECT_FALSE(accepts(two, "{}"));
  const auto a = automaton_of(two);
  JsonMatcher m(a);
  EXPECT_TRUE(m.accept(R"({"b)"));
  m.reset();
  EXPECT_FALSE(m.accept(R"({"c)"));  // c first leaves no property to be the second
  // Required properties count against the maximum: after "a", only "c" (required) may come.
  const char* req = R"({"properties": {"a": {}, "b": {}, "c": {}}, "required": ["c"],
                        "maxProperties": 2})";
  EXPECT_TRUE(accepts(req, R"({"a": 1, "c": 2})"));
  EXPECT_FALSE(accepts(req, R"({"a": 1, "b": 2, "c": 3})"));
  JsonMatcher r(automaton_of(req));
  ASSERT_TRUE(r.accept(R"({"a": 1, )"));
  EXPECT_FALSE(r.accept(R"("b)"));
  // Undeclared properties fill the minimum and stop at the maximum.
  const char* open = R"({"properties": {"a": {}}, "additionalProperties": {"type": "integer"},
                         "minProperties": 2, "maxProperties": 3})";
  EXPECT_FALSE(accepts(open, R"({"a": 1})"));
  EXPECT_TRUE(accepts(open, R"({"a": 1, "x": 2})"));
  EXPECT_TRUE(accepts(open, R"({"x": 1, "y": 2, "z": 3})"));
  EXPECT_FALSE(accepts(open, R"({"x": 1, "y": 2, "z": 3, "w": 4})"));
}

TEST(JsonMatcher, PrefixItemsAreAllPresent) {
  const char* s = R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "null"}]})";
  EXPECT_TRUE(accepts(s, R"(["a", null])"));
  EXPECT_FALSE(accepts(s, R"(["a"])"));
  EXPECT_FALSE(accepts(s, R"(["a", null, 1])"));
  const char* more = R"({"type": "array", "prefixItems": [{"type": "string"}],
                         "items": {"type": "integer"}, "maxItems": 3})";
  EXPECT_TRUE(accepts(more, R"(["a", 1, 2])"));
  EXPECT_FALSE(accepts(more, R"(["a", 1, 2, 3])"));
  EXPECT_FALSE(accepts(more, R"([1])"));
}

TEST(JsonMatcher, EnumConstAnyOfRef) {
  const char* e = R"({"enum": ["a", 1, null, {"k": [true]}]})";
  EXPECT_TRUE(accepts(e, R"("a")"));
  EXPECT_TRUE(accepts(e, "1"));
  EXPECT_TRUE(accepts(e, R"({"k":[true]})"));  // literals are compact JSON
  EXPECT_FALSE(accepts(e, R"({"k": [true]})"));
  EXPECT_FALSE(accepts(e, "1.0"));
  EXPECT_FALSE(accepts(e, R"("b")"));
  const char* any = R"({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer"}]})";
  EXPECT_TRUE(accepts(any, R"("ab")"));
  EXPECT_TRUE(accepts(any, "-12"));
  EXPECT_FALSE(accepts(any, R"("abc")"));
  const char* list = R"({"$defs": {"node": {"type": "object", "properties": {"v": {"type":
      "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
      "required": ["v", "next"]}}, "$ref": "#/$defs/node"})";
  EXPECT_TRUE(accepts(list, R"({"v": 1, "next": {"v": 2, "next": null}})"));
  EXPECT_FALSE(accepts(list, R"({"v": 1, "next": {"v": 2}})"));
  const char* types = R"({"type": ["string", "null"], "minLength": 2})";
  EXPECT_TRUE(accepts(types, "null"));
  EXPECT_TRUE(accepts(types, R"("ab")"));
  EXPECT_FALSE(accepts(types, R"("a")"));
}

TEST(JsonMatcher, EndsAndRollback) {
  JsonMatcher number(automaton_of(kNumber));
  EXPECT_TRUE(number.accept("12"));
  EXPECT_TRUE(number.can_end());
  EXPECT_FALSE(number.must_end());  // more digits may come
  JsonMatcher small(automaton_of(R"({"type": "integer", "maximum": 5, "minimum": 0})"));
  EXPECT_TRUE(small.accept("5"));
  EXPECT_TRUE(small.must_end());
  JsonMatcher object(automaton_of(kObject));
  EXPECT_TRUE(object.accept("{\"a\""));
  EXPECT_TRUE(object.accept(": 1}"));
  EXPECT_TRUE(object.must_end());
  EXPECT_FALSE(object.accept(" "));
  object.rollback(1);
  EXPECT_FALSE(object.can_end());
  EXPECT_TRUE(object.accept(": 1, \"b\": 2}"));
  EXPECT_EQ(object.num_accepted(), 2u);
  object.reset();
  EXPECT_EQ(object.num_accepted(), 0u);
  EXPECT_FALSE(object.accept(""));
}

}  // namespace
}  // namespace ctxpar::structured

namespace ctxpar::structured {
namespace {

// structured_outputs {"choice": [...]}: exactly one of the strings, raw (no quotes, no
// whitespace), including choices that begin others and multi-byte characters; every prefix
// of a choice is open and ends only where a choice does.
TEST(ChoiceGrammar, AcceptsExactlyTheChoices) {
  SEEDED_RNG(rng);
  const std::string alphabet[] = {"a", "b", " ", "\"", "é", "中", "\n"};
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<std::string> choices;
    for (size_t n = 1 + rng() % 5; n > 0; --n) {
      std::string c;
      for (size_t len = 1 + rng() % 4; len > 0; --len) c += alphabet[rng() % std::size(alphabet)];
      choices.push_back(c);
    }
    if (trial % 3 == 0) choices.push_back(choices[0] + "b");  // one choice begins another
    const JsonAutomaton a(std::make_shared<Grammar>(choice_grammar(choices)));
    const auto is_choice = [&](const std::string& s) {
      return std::find(choices.begin(), choices.end(), s) != choices.end();
    };
    for (const std::string& c : choices) {
      EXPECT_TRUE(testing::accepts(a, c)) << c;
      StateSet s = a.initial(), next;
      for (size_t i = 0; i < c.size(); ++i) {
        EXPECT_EQ(a.can_end(s), is_choice(c.substr(0, i))) << c << " at " << i;
        ASSERT_TRUE(a.advance(s, static_cast<uint8_t>(c[i]), next)) << c << " at " << i;
        std::swap(s, next);
      }
      for (const std::string& other : {"\"" + c + "\"", c + " ", " " + c}) {
        EXPECT_EQ(testing::accepts(a, other), is_choice(other)) << other;
      }
    }
    // Random texts over the same alphabet: accepted exactly when they are a choice.
    for (int k = 0; k < 40; ++k) {
      std::string t;
      for (size_t len = rng() % 6; len > 0; --len) t += alphabet[rng() % std::size(alphabet)];
      EXPECT_EQ(testing::accepts(a, t), is_choice(t)) << t;
    }
  }
  EXPECT_THROW(choice_grammar({}), InputError);
  try {
    choice_grammar({"yes", ""});
    ADD_FAILURE() << "an empty choice was taken";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("choice[1] is empty"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ctxpar::structured
