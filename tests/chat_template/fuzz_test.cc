// Random, truncated and mutated template text always gives a rendered string or a
// ctxpar::Error: never a crash, a hang, or another exception type.
#include <gtest/gtest.h>

#include <random>

#include "chat_template/fixtures.h"
#include "ctxpar/core/error.h"
#include "support/seeded_rng.h"

namespace ctxpar::chat_template {
namespace {

struct Tally {
  int rendered = 0;
  int errors = 0;
};

void render_or_error(const std::string& source, const nlohmann::ordered_json& context,
                     Tally& tally) {
  RenderOptions options = testing::fixed_clock_options();
  options.limits.max_steps = 200'000;
  options.limits.max_output_bytes = 1 << 20;
  options.limits.max_call_depth = 20;
  try {
    const ChatTemplate t = ChatTemplate::parse(source, "fuzz.jinja");
    t.render(context, options);
    ++tally.rendered;
  } catch (const InputError&) {
    ++tally.errors;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "an exception other than ctxpar::InputError: " << e.what()
                  << " for: " << source;
  }
}

nlohmann::ordered_json fuzz_context() {
  const auto goldens = testing::load_fixture_json("goldens.json");
  nlohmann::ordered_json ctx = {{"add_generation_prompt", true},
                                {"bos_token", "<s>"},
                                {"eos_token", "</s>"},
                                {"x", 3},
                                {"s", "text"}};
  ctx["messages"] = goldens["conversations"]["tool_round_trip_dict_args"]["messages"];
  ctx["tools"] = goldens["conversations"]["tool_round_trip_dict_args"]["tools"];
  return ctx;
}

std::vector<std::string> real_template_sources() {
  std::vector<std::string> out;
  const auto goldens = testing::load_fixture_json("goldens.json");
  std::string last;
  for (const auto& c : goldens["cases"]) {
    const std::string file = c["template"].get<std::string>();
    if (file == last) continue;
    last = file;
    out.push_back(testing::read_fixture_text("templates/" + file));
  }
  return out;
}

TEST(ChatTemplateFuzz, RandomTokenSoup) {
  const unsigned seed = test_support::test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  static const std::vector<std::string> pieces = {
      "{{",      "}}",       "{%",        "%}",     "{#",        "#}",    "-",
      "+",       " ",        "\n",        "if",     "else",      "elif",  "endif",
      "for",     "in",       "endfor",    "set",    "=",         "macro", "endmacro",
      "(",       ")",        "[",         "]",      "{",         "}",     ",",
      ":",       ".",        "|",         "'",      "\"",        "\\",    "x",
      "s",       "messages", "loop",      "ns",     "namespace", "range", "1",
      "0",       "-1",       "2.5",       "not",    "and",       "or",    "is",
      "defined", "none",     "tojson",    "length", "trim",      "~",     "*",
      "/",       "//",       "%",         "**",     "==",        "<",     "raw",
      "endraw",  "break",    "continue",  "é",      "\xff",      "\x00",  "raise_exception",
      "items()", "[::-1]",   "recursive", "with"};
  const nlohmann::ordered_json ctx = fuzz_context();
  Tally tally;
  for (int i = 0; i < 3000; ++i) {
    std::string source;
    const int n = std::uniform_int_distribution<int>(0, 40)(rng);
    for (int k = 0; k < n; ++k) {
      source += pieces[std::uniform_int_distribution<size_t>(0, pieces.size() - 1)(rng)];
    }
    render_or_error(source, ctx, tally);
  }
  EXPECT_GT(tally.rendered, 0);
  EXPECT_GT(tally.errors, 0);
}

TEST(ChatTemplateFuzz, RandomBytes) {
  const unsigned seed = test_support::test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const nlohmann::ordered_json ctx = fuzz_context();
  Tally tally;
  for (int i = 0; i < 2000; ++i) {
    std::string source(std::uniform_int_distribution<size_t>(0, 64)(rng), '\0');
    for (char& c : source) c = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
    render_or_error(source, ctx, tally);
  }
  EXPECT_EQ(tally.rendered + tally.errors, 2000);
}

TEST(ChatTemplateFuzz, TruncatedAndMutatedRealTemplates) {
  const unsigned seed = test_support::test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  const nlohmann::ordered_json ctx = fuzz_context();
  Tally tally;
  for (const std::string& source : real_template_sources()) {
    for (int i = 0; i < 60; ++i) {
      // Every real template cut at a random point...
      render_or_error(
          source.substr(0, std::uniform_int_distribution<size_t>(0, source.size())(rng)), ctx,
          tally);
      // ...and with a few random characters deleted, duplicated or replaced.
      std::string mutated = source;
      const int edits = std::uniform_int_distribution<int>(1, 4)(rng);
      for (int e = 0; e < edits && !mutated.empty(); ++e) {
        const size_t at = std::uniform_int_distribution<size_t>(0, mutated.size() - 1)(rng);
        switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
          case 0:
            mutated.erase(at, 1);
            break;
          case 1:
            mutated.insert(at, 1, mutated[at]);
            break;
          default:
            mutated[at] = "{}%#-+'\"()[]|.x "[std::uniform_int_distribution<int>(0, 15)(rng)];
        }
      }
      render_or_error(mutated, ctx, tally);
    }
  }
  EXPECT_GT(tally.rendered, 0);
  EXPECT_GT(tally.errors, 0);
}

}  // namespace
}  // namespace ctxpar::chat_template
