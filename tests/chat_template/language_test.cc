// Each language construct against jinja2: tests/fixtures/chat_templates/language.json holds
// small templates (one construct each) and what jinja2 3.1.6 renders for them, or that it
// raised. A case that jinja2 renders must render to exactly the same text; a case where
// jinja2 raises must throw ctxpar::Error.
#include <gtest/gtest.h>

#include "chat_template/fixtures.h"
#include "ctxpar/core/error.h"

namespace ctxpar::chat_template {
namespace {

using testing::fixed_clock_options;
using testing::load_fixture_json;

struct LanguageCase {
  std::string name;
  std::string source;
  std::optional<std::string> expected;
  std::string error;
};

void PrintTo(const LanguageCase& c, std::ostream* os) {
  *os << c.name;
}

const nlohmann::ordered_json& language_fixture() {
  static const nlohmann::ordered_json fixture = load_fixture_json("language.json");
  return fixture;
}

std::vector<LanguageCase> language_cases() {
  std::vector<LanguageCase> out;
  for (const auto& c : language_fixture()["cases"]) {
    LanguageCase lc;
    lc.name = c["name"].get<std::string>();
    lc.source = c["template"].get<std::string>();
    if (c.contains("expected")) {
      lc.expected = c["expected"].get<std::string>();
    } else {
      lc.error = c["error"].get<std::string>();
    }
    out.push_back(std::move(lc));
  }
  return out;
}

class Jinja2Language : public ::testing::TestWithParam<LanguageCase> {};

TEST_P(Jinja2Language, MatchesJinja2) {
  const LanguageCase& c = GetParam();
  const auto& context = language_fixture()["context"];
  if (c.expected) {
    const ChatTemplate t = ChatTemplate::parse(c.source, c.name + ".jinja");
    EXPECT_EQ(t.render(context, fixed_clock_options()), *c.expected) << c.source;
    return;
  }
  std::string message;
  try {
    ChatTemplate::parse(c.source, c.name + ".jinja").render(context, fixed_clock_options());
    FAIL() << "jinja2 raised " << c.error << " but ctxpar rendered " << c.source;
  } catch (const InputError& e) {
    message = e.what();
  }
  const std::string raised = "TemplateError: ";
  if (c.error.rfind(raised, 0) == 0) {
    // raise_exception: the template's own message, unchanged.
    EXPECT_EQ(message, c.error.substr(raised.size()));
  } else {
    // Every other error names the template (and, where it has one, the line and column).
    EXPECT_NE(message.find(c.name + ".jinja"), std::string::npos) << message;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Jinja2Language, ::testing::ValuesIn(language_cases()),
                         [](const auto& param_info) {
                           return testing::test_name(param_info.param.name);
                         });

}  // namespace
}  // namespace ctxpar::chat_template
