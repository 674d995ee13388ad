// --tool-call-parser pythonic (Llama 3.2, Llama 4): whole outputs split as vLLM 0.23-0.33's
// pythonic_tool_parser.py splits them (the cases of vLLM's test_pythonic_tool_parser.py, its
// start pattern, Python's syntax around the list and the literals get_parameter_value takes),
// and streams cut at random points that add up to the whole split.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "ctxpar/server/pythonic_tool_calls.h"
#include "ctxpar/server/tool_call_parser.h"
#include "support/seeded_rng.h"
#include "tool_call_stream_util.h"

namespace ctxpar::server {
namespace {

using test::expect_content;
using test::expect_split;

ToolCallSplit pythonic(std::string_view text) {
  return split_tool_calls(ToolCallParser::kPythonic, text, nullptr);
}

// The calls, with null content (pythonic keeps no text beside its list).
void expect_calls(const ToolCallSplit& got,
                  const std::vector<std::pair<std::string, std::string>>& calls) {
  expect_split(got, std::nullopt, calls);
}

const char* kSimple = "get_weather(city='San Francisco', metric='celsius')";
const char* kSimpleArgs = R"({"city": "San Francisco", "metric": "celsius"})";
const char* kMoreTypes =
    "register_user(name='John Doe', age=37, address={'city': 'San Francisco', 'state': 'CA'}, "
    "role=None, passed_test=True, aliases=['John', 'Johnny'])";
const char* kMoreTypesArgs =
    R"({"name": "John Doe", "age": 37, "address": {"city": "San Francisco", "state": "CA"}, )"
    R"("role": null, "passed_test": true, "aliases": ["John", "Johnny"]})";

TEST(PythonicToolCalls, VllmsCases) {
  expect_content(pythonic("How can I help you today?"), "How can I help you today?");
  expect_calls(pythonic(fmt::format("[{}]", kSimple)), {{"get_weather", kSimpleArgs}});
  expect_calls(pythonic(fmt::format("[{}]", kMoreTypes)), {{"register_user", kMoreTypesArgs}});
  expect_calls(pythonic("[get_weather()]"), {{"get_weather", "{}"}});
  expect_calls(pythonic("[do_something_cool(additional_data={})]"),
               {{"do_something_cool", R"({"additional_data": {}})"}});
  expect_calls(pythonic("[do_something_cool(steps=[])]"),
               {{"do_something_cool", R"({"steps": []})"}});
  expect_calls(pythonic(R"([get_weather(city='Martha\'s Vineyard', metric='\"cool units\"')])"),
               {{"get_weather", R"({"city": "Martha's Vineyard", "metric": "\"cool units\""})"}});
  expect_calls(pythonic(fmt::format("[{}, {}]", kSimple, kMoreTypes)),
               {{"get_weather", kSimpleArgs}, {"register_user", kMoreTypesArgs}});
  // Where later vLLM (0.34) keeps the good siblings, 0.23-0.33 give up on the whole output.
  for (const std::string& text :
       {fmt::format("[bad(x=b'z'), {}]", kSimple), fmt::format("[{}, f(a='x 'y', b='z')]", kSimple),
        std::string("[foo(x=1])]")}) {
    expect_content(pythonic(text), text);
  }
  expect_calls(pythonic(fmt::format("[calc(x=1e999), {}]", kSimple)),
               {{"calc", R"({"x": Infinity})"}, {"get_weather", kSimpleArgs}});
}

TEST(PythonicToolCalls, ThePatternAndPythonsSyntax) {
  // The start must be vLLM's pattern: '[' at once, a first call NAME( then ')' or KEY=.
  for (const char* text : {" [f()]", "I think [f()]", "[]", "[f(1)]", "[_f()]", "[f( a=1)]",
                           "[f(a = 1)]", "[a.b(x=1)]", "[1, f()]"}) {
    expect_content(pythonic(text), text);
  }
  // After it, Python's syntax: dotted names, spaces and newlines inside the brackets, comments,
  // a trailing comma, positional arguments (ignored), a repeated keyword (the last value).
  expect_calls(pythonic("[f(x=1), a . b(y=[1,\n 2], # why\n z='s' \"t\",)]"),
               {{"f", R"({"x": 1})"}, {"a.b", R"({"y": [1, 2], "z": "st"})"}});
  expect_calls(pythonic("[f(a=1), g(2, 'x', b=2, b=(3), **{'k': None})]"),
               {{"f", R"({"a": 1})"}, {"g", R"({"b": 3, "null": {"k": null}})"}});
  // What may follow the list: nothing, blank and comment lines, a ';'.
  for (const char* tail : {"", "\n", " # done\n\n  # more", ";", "; # x\n"}) {
    expect_calls(pythonic(fmt::format("[f()]{}", tail)), {{"f", "{}"}});
  }
  // The pattern wants `)` and `]` with only space between: no comma after the last call.
  for (const char* text : {"[f(),]", "[f()] trailing", "[f()]<|eot_id|>", "[f()];;", "[f()] \\\n",
                           "[f()][0]", "[f()] + [g()]", "[f(),\n", "[f(a=1, 2)]", "[f(a='x)]"}) {
    expect_content(pythonic(text), text);
  }
}

TEST(PythonicToolCalls, ValuesAreWhatGetParameterValueTakes) {
  const auto args = [](std::string_view value) {
    const ToolCallSplit got = pythonic(fmt::format("[f(x={})]", value));
    return got.calls.size() == 1 ? got.calls[0].arguments : std::string("(content)");
  };
  EXPECT_EQ(args("[True, False, None, true, false, null]"),
            R"({"x": [true, false, null, true, false, null]})");
  EXPECT_EQ(args("[1_000, 0x1F, 2.50, 1., .5, 1e400, 18446744073709551615]"),
            R"({"x": [1000, 31, 2.5, 1.0, 0.5, Infinity, 18446744073709551615]})");
  EXPECT_EQ(args(R"(('a' "b" r'\d' '''c'''))"), R"({"x": "ab\\dc"})");
  EXPECT_EQ(args("'é😀\\n\\x41'"), R"({"x": "é😀\nA"})");
  // Dict keys: constants as json.dumps writes them; 1, 1.0 and True are one key.
  EXPECT_EQ(args("{1: 'a', 'k': 2, 1.0: 'b', True: 'c', None: 1, 2.5: 0, 1e400: 3}"),
            R"({"x": {"1": "c", "k": 2, "null": 1, "2.5": 0, "Infinity": 3}})");
  // Not literals vLLM takes: a negative number (an operator), tuples, sets, names, f-strings,
  // calls, dicts with non-constant keys.
  for (const char* v : {"-1", "+1", "(1,)", "()", "{1, 2}", "y", "f'x'", "g()", "{[1]: 2}", "{**d}",
                        "[*a]", "1 + 2", "'a'.upper()", "[1][0]", "lambda: 1"}) {
    EXPECT_EQ(args(v), "(content)") << v;
  }
  // Constants json.dumps refuses fail only if they stay in the arguments.
  for (const char* v : {"b'x'", "1j", "...", "[b'x']", "{b'k': 1}"}) {
    EXPECT_EQ(args(v), "(content)") << v;
  }
  EXPECT_EQ(pythonic("[f(x=b'z', y=1j, x=..., x=2, y=3)]").calls.at(0).arguments,
            R"({"x": 2, "y": 3})");
  EXPECT_EQ(args("b'a' 'b'"), "(content)");  // bytes and str do not join
}

TEST(PythonicToolCalls, RandomlyCutStreamsAddUpToTheWholeSplit) {
  SEEDED_RNG(rng);
  static const char* kOutputs[] = {"[get_weather(city='Paris'), now()]",
                                   "[f(x=[1, {'a': None}])]",
                                   "Hello [f()]",
                                   "[f(x=-1)]",
                                   "",
                                   "[f(a='[x]')]\n",
                                   "plain text",
                                   "[f("};
  for (int round = 0; round < 200; ++round) {
    std::string text = kOutputs[rng() % std::size(kOutputs)];
    if (rng() % 3 == 0) text += test::random_text(rng, rng() % 6, "ab ,()[]=\n#");
    SCOPED_TRACE(text);
    const ToolCallSplit want = pythonic(text);
    const ToolCallStream::Delta got =
        test::stream_in_random_pieces(ToolCallParser::kPythonic, nullptr, text, rng, 5);
    test::expect_same_calls(got.calls, want.calls);
    EXPECT_EQ(got.content, want.content.value_or(""));
  }
  // Text that cannot start a call list goes out at once.
  ToolCallStream stream(ToolCallParser::kPythonic);
  EXPECT_EQ(stream.add("Sure", false).content, "Sure");
  ToolCallStream held(ToolCallParser::kPythonic);
  EXPECT_EQ(held.add("[f(", false).content, "");
  EXPECT_EQ(held.add(")]", true).calls.size(), 1u);
}

}  // namespace
}  // namespace ctxpar::server
