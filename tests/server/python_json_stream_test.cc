// PythonJsonStream against the whole-value path (python_json_text of what nlohmann reads, as
// the non-streamed response writes a call's arguments): random JSON texts with every kind of
// value, escape and spacing, fed in random pieces, must add up to exactly that text; text the
// whole path refuses stops the stream with only a prefix of it out.
#include "ctxpar/server/python_json_stream.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "ctxpar/server/python_json.h"
#include "support/seeded_rng.h"

namespace ctxpar::server {
namespace {

using ordered_json = nlohmann::ordered_json;

std::string space(std::mt19937_64& rng) {
  static const char* kSpaces[] = {"", "", "", " ", "\n", "  ", "\t", "\r\n"};
  return kSpaces[rng() % 8];
}

// A string's JSON text with escapes drawn at random: plain, short, \u (both cases), surrogate
// pairs, non-ASCII raw.
std::string string_text(std::mt19937_64& rng) {
  static const char* kPieces[] = {"a",
                                  "Z",
                                  " ",
                                  "\\\"",
                                  "\\\\",
                                  "\\/",
                                  "\\n",
                                  "\\t",
                                  "\\r",
                                  "\\b",
                                  "\\f",
                                  "\\u0041",
                                  "\\u00e9",
                                  "\\u00E9",
                                  "\\u001f",
                                  "\\u0000",
                                  "\\ud83d\\ude00",
                                  "é",
                                  "中",
                                  "😀",
                                  "\x7f",
                                  "{",
                                  "}",
                                  "[",
                                  ",",
                                  ":",
                                  "'"};
  std::string s = "\"";
  const int n = static_cast<int>(rng() % 8);
  for (int i = 0; i < n; ++i) s += kPieces[rng() % (sizeof(kPieces) / sizeof(kPieces[0]))];
  return s + "\"";
}

std::string number_text(std::mt19937_64& rng) {
  static const char* kNumbers[] = {"0",
                                   "-0",
                                   "7",
                                   "-12",
                                   "123456789012",
                                   "1.5",
                                   "-0.25",
                                   "1e3",
                                   "1E+3",
                                   "2.50e-3",
                                   "1e16",
                                   "1.0",
                                   "123456789012345678901234567890",
                                   "0.1",
                                   "-1e-7"};
  return kNumbers[rng() % (sizeof(kNumbers) / sizeof(kNumbers[0]))];
}

std::string value_text(std::mt19937_64& rng, int depth) {
  const int kind = static_cast<int>(rng() % (depth < 3 ? 7 : 4));
  switch (kind) {
    case 0:
      return string_text(rng);
    case 1:
      return number_text(rng);
    case 2: {
      static const char* kLiterals[] = {"true", "false", "null"};
      return kLiterals[rng() % 3];
    }
    case 3:
      return string_text(rng);
    case 4:
    case 5: {
      std::string s = "{" + space(rng);
      const int n = static_cast<int>(rng() % 4);
      for (int i = 0; i < n; ++i) {
        if (i > 0) s += "," + space(rng);
        s += "\"k" + std::to_string(i) + "\"" + space(rng) + ":" + space(rng) +
             value_text(rng, depth + 1) + space(rng);
      }
      return s + "}";
    }
    default: {
      std::string s = "[" + space(rng);
      const int n = static_cast<int>(rng() % 4);
      for (int i = 0; i < n; ++i) {
        if (i > 0) s += space(rng) + "," + space(rng);
        s += value_text(rng, depth + 1);
      }
      return s + space(rng) + "]";
    }
  }
}

// `text` in pieces of 1 to 6 bytes.
std::string stream(PythonJsonStream& s, const std::string& text, std::mt19937_64& rng) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    const size_t n = std::min(text.size() - at, size_t{1} + rng() % 6);
    out += s.add(std::string_view(text).substr(at, n));
    at += n;
  }
  return out;
}

TEST(PythonJsonStream, AddsUpToTheWholeValuesText) {
  SEEDED_RNG(rng);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string text = value_text(rng, 0);
    if (text[0] != '{' && text[0] != '[') text = "[" + text + "]";
    const std::string after = rng() % 2 == 0 ? "" : space(rng) + "}\n</tool_call>";
    const ordered_json v = ordered_json::parse(text);
    PythonJsonStream s;
    const std::string out = stream(s, text + after, rng);
    EXPECT_TRUE(s.done()) << text;
    EXPECT_EQ(out, python_json_text(v)) << text;
    EXPECT_EQ(s.consumed(), text.size()) << text;
  }
}

TEST(PythonJsonStream, StopsWhereTheWholePathRefuses) {
  SEEDED_RNG(rng);
  const char* refused[] = {"{\"a\": \"x\ny\"}",    "{\"a\": \"\\ud83d\"}",
                           "{\"a\": \"\\ude00\"}", "{\"a\": NaN}",
                           "{\"a\": 01}",          "{\"a\": 1.}",
                           "{\"a\": tru}",         "{\"a\" 1}",
                           "{\"a\": 1,}",          "[1 2]",
                           "{\"a\": \"\\q\"}",     "{\"a\": \"\\u12G4\"}"};
  for (const char* text : refused) {
    EXPECT_FALSE(ordered_json::accept(text)) << text;  // the whole path refuses it too
    PythonJsonStream s;
    const std::string out = stream(s, text, rng);
    EXPECT_TRUE(s.failed()) << text;
    EXPECT_FALSE(s.done()) << text;
    EXPECT_LT(out.size(), std::string(text).size() + 8) << text;
  }
  // Only an object or an array starts a stream.
  PythonJsonStream top;
  EXPECT_EQ(top.add("\"a string\""), "");
  EXPECT_TRUE(top.failed());
}

}  // namespace
}  // namespace ctxpar::server
