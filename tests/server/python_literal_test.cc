// eval_python_literal and python_json_text: what ast.literal_eval makes of a GLM tool call's
// argument text and how json.dumps writes it (the expected texts are CPython 3.11's
// json.dumps(ast.literal_eval(text), ensure_ascii=False)), and the texts literal_eval refuses.
#include "ctxpar/server/python_literal.h"

#include <gtest/gtest.h>

#include <string>

#include "ctxpar/server/python_json.h"

namespace ctxpar::server {
namespace {

using Kind = PythonLiteral::Kind;

std::string dumped(std::string_view text) {
  const PythonLiteral v = eval_python_literal(text);
  EXPECT_EQ(v.kind, Kind::kJson) << text;
  return python_json_text(v.value);
}

TEST(PythonLiteral, ValuesAsJsonDumpsWritesThem) {
  EXPECT_EQ(dumped("None"), "null");
  EXPECT_EQ(dumped("True"), "true");
  EXPECT_EQ(dumped("[True, False, None]"), "[true, false, null]");
  EXPECT_EQ(dumped("42"), "42");
  EXPECT_EQ(dumped("-7"), "-7");
  EXPECT_EQ(dumped("+ 7"), "7");
  EXPECT_EQ(dumped("-( (2.5) )"), "-2.5");
  EXPECT_EQ(dumped("1_000_000"), "1000000");
  EXPECT_EQ(dumped("0x1F"), "31");
  EXPECT_EQ(dumped("0o17"), "15");
  EXPECT_EQ(dumped("0b101"), "5");
  EXPECT_EQ(dumped("000"), "0");
  EXPECT_EQ(dumped("18446744073709551615"), "18446744073709551615");
  EXPECT_EQ(dumped("-9223372036854775808"), "-9223372036854775808");
  EXPECT_EQ(dumped("-5"), "-5");
  // Past int64's negative range a float (Python keeps the exact integer).
  EXPECT_EQ(dumped("-9223372036854775809"), "-9.223372036854776e+18");
  EXPECT_EQ(dumped("-18446744073709551615"), "-1.8446744073709552e+19");
  EXPECT_EQ(dumped("3.14"), "3.14");
  EXPECT_EQ(dumped("1."), "1.0");
  EXPECT_EQ(dumped(".5"), "0.5");
  EXPECT_EQ(dumped("1e3"), "1000.0");
  EXPECT_EQ(dumped("1e16"), "1e+16");
  EXPECT_EQ(dumped("1e15"), "1000000000000000.0");
  EXPECT_EQ(dumped("1e-5"), "1e-05");
  EXPECT_EQ(dumped("1e999"), "Infinity");
  EXPECT_EQ(dumped("-1e999"), "-Infinity");
  EXPECT_EQ(dumped("'single'"), "\"single\"");
  EXPECT_EQ(dumped("\"dou'ble\""), "\"dou'ble\"");
  EXPECT_EQ(dumped("'a' \"b\" '''c'''"), "\"abc\"");
  EXPECT_EQ(dumped("'''two\nlines'''"), "\"two\\nlines\"");
  EXPECT_EQ(dumped(R"('tab\there\x41\101\u00e9\U0001F600\q')"), "\"tab\\there\x41\x41é😀\\\\q\"");
  EXPECT_EQ(dumped(R"(r'raw\n\'')"), R"("raw\\n\\'")");
  EXPECT_EQ(dumped("u'你好'"), "\"你好\"");
  EXPECT_EQ(dumped("(1, 2)"), "[1, 2]");
  EXPECT_EQ(dumped("(1,)"), "[1]");
  EXPECT_EQ(dumped("()"), "[]");
  EXPECT_EQ(dumped("(5)"), "5");
  EXPECT_EQ(dumped("1, 'a'"), "[1, \"a\"]");
  EXPECT_EQ(dumped("[1, 2,]"), "[1, 2]");
  EXPECT_EQ(dumped("{'b': 1, 'a': [1, {'c': None}]}"), R"({"b": 1, "a": [1, {"c": null}]})");
  EXPECT_EQ(dumped("{}"), "{}");
  EXPECT_EQ(dumped("{'k': 1, 'k': 2, 'j': 3}"), R"({"k": 2, "j": 3})");
  // json.dumps writes non-string keys as strings.
  EXPECT_EQ(dumped("{1: 'a', 2.5: 'b', None: 'c', False: 'd'}"),
            R"({"1": "a", "2.5": "b", "null": "c", "false": "d"})");
  EXPECT_EQ(dumped("[\n  1,  # one\n  2\n]"), "[1, 2]");
  EXPECT_EQ(dumped("  [1]  # trailing comment"), "[1]");
}

TEST(PythonLiteral, LiteralsJsonDumpsRefuses) {
  for (const char* text : {"{1, 2}", "set()", "b'bytes'", "1j", "1+2j", "-1.5-2j", "...",
                           "[1, {2}]", "{(1, 2): 'tuple key'}", "{'a': b'x'}", "{[1]: 2}"}) {
    EXPECT_EQ(eval_python_literal(text).kind, Kind::kNotJson) << text;
  }
}

TEST(PythonLiteral, TextsLiteralEvalRefuses) {
  for (const char* text : {"",
                           "hello",
                           "hello world",
                           "true",
                           "null",
                           "1 + 2",
                           "--1",
                           "-True",
                           "-(1,)",
                           "-(-1)",
                           "1 2",
                           "007",
                           "1__0",
                           "1_",
                           "0x",
                           "1e",
                           "1abc",
                           "[1, 2",
                           "{'a' 1}",
                           "{'a': 1, 2}",
                           "'unterminated",
                           "'new\nline'",
                           "f'x'",
                           "ur'x'",
                           "b'é'",
                           "'\\N{BULLET}'",
                           "'\\x4'",
                           "'\\U00110000'",
                           "print(1)",
                           "set(1)",
                           "x.y",
                           "[1]\n[2]",
                           "1,\n2",
                           "1 if 1 else 2",
                           "{**a}",
                           "\u00a01"}) {
    EXPECT_EQ(eval_python_literal(text).kind, Kind::kNotLiteral) << text;
  }
  // Python's parser stops at 200 nested brackets.
  EXPECT_EQ(eval_python_literal(std::string(199, '[') + std::string(199, ']')).kind, Kind::kJson);
  EXPECT_EQ(eval_python_literal(std::string(200, '[') + std::string(200, ']')).kind, Kind::kJson);
  EXPECT_EQ(eval_python_literal(std::string(201, '[') + std::string(201, ']')).kind,
            Kind::kNotLiteral);
  EXPECT_EQ(eval_python_literal(std::string(100000, '[')).kind, Kind::kNotLiteral);
}

TEST(PythonJson, FloatsAndTextAsJsonDumpsWritesThem) {
  using ordered_json = nlohmann::ordered_json;
  EXPECT_EQ(python_json_text(ordered_json::parse(R"({"z": 1.0, "a": [1e16, 1e15, 0.0001]})")),
            R"({"z": 1.0, "a": [1e+16, 1000000000000000.0, 0.0001]})");
  EXPECT_EQ(python_json_text(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(python_json_text("é\"\\\n\x01"), "\"é\\\"\\\\\\n\\u0001\"");
}

}  // namespace
}  // namespace ctxpar::server
