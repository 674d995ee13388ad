// The real chat templates (tests/fixtures/chat_templates/templates, see NOTES.md there) over
// varied conversations, against jinja2 renders made the way transformers renders them
// (goldens.json). Every case jinja2 renders must come out byte for byte the same; every case
// where jinja2 raises (a template refusing a conversation) must throw ctxpar::Error.
#include <gtest/gtest.h>

#include <map>

#include "chat_template/fixtures.h"
#include "ctxpar/core/error.h"

namespace ctxpar::chat_template {
namespace {

using testing::fixed_clock_options;
using testing::load_fixture_json;

const nlohmann::ordered_json& goldens() {
  static const nlohmann::ordered_json fixture = load_fixture_json("goldens.json");
  return fixture;
}

const ChatTemplate& real_template(const std::string& file) {
  static std::map<std::string, ChatTemplate> cache;
  auto it = cache.find(file);
  if (it == cache.end()) {
    it = cache
             .emplace(file,
                      ChatTemplate::parse(testing::read_fixture_text("templates/" + file), file))
             .first;
  }
  return it->second;
}

struct GoldenCase {
  size_t index;
  std::string name;
};

void PrintTo(const GoldenCase& c, std::ostream* os) {
  *os << c.name;
}

std::vector<GoldenCase> golden_cases() {
  std::vector<GoldenCase> out;
  const auto& cases = goldens()["cases"];
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    std::string name = c["template"].get<std::string>();
    name = name.substr(0, name.size() - 6) + "__" + c["conversation"].get<std::string>();
    if (c["add_generation_prompt"].get<bool>()) name += "__gen";
    if (c["continue_final_message"].get<bool>()) name += "__continue";
    for (const auto& [k, v] : c["chat_template_kwargs"].items()) name += "__" + k + "_" + v.dump();
    out.push_back({i, testing::test_name(name)});
  }
  return out;
}

class RealTemplates : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(RealTemplates, MatchesJinja2) {
  const auto& c = goldens()["cases"][GetParam().index];
  const auto& conversation = goldens()["conversations"][c["conversation"].get<std::string>()];
  ChatRequest request;
  request.messages = conversation["messages"];
  if (conversation.contains("tools")) request.tools = conversation["tools"];
  request.add_generation_prompt = c["add_generation_prompt"].get<bool>();
  request.continue_final_message = c["continue_final_message"].get<bool>();
  request.special_tokens = c["special_tokens"];
  request.chat_template_kwargs = c["chat_template_kwargs"];
  const ChatTemplate& t = real_template(c["template"].get<std::string>());
  if (c.contains("expected")) {
    EXPECT_EQ(apply_chat_template(t, request, fixed_clock_options()),
              c["expected"].get<std::string>());
  } else {
    EXPECT_THROW(apply_chat_template(t, request, fixed_clock_options()), InputError)
        << "jinja2: " << c["error"].get<std::string>();
  }
}

INSTANTIATE_TEST_SUITE_P(Goldens, RealTemplates, ::testing::ValuesIn(golden_cases()),
                         [](const auto& param_info) { return param_info.param.name; });

// Where a real template refuses a conversation with raise_exception, ctxpar reports the
// template's own message, as vLLM returns it to the client.
TEST(RealTemplates, RaiseExceptionMessagesAreTheTemplates) {
  int checked = 0;
  for (const auto& c : goldens()["cases"]) {
    if (!c.contains("error") || c["error"].get<std::string>().rfind("TemplateError: ", 0) != 0 ||
        c["continue_final_message"].get<bool>()) {
      continue;
    }
    const auto& conversation = goldens()["conversations"][c["conversation"].get<std::string>()];
    ChatRequest request;
    request.messages = conversation["messages"];
    if (conversation.contains("tools")) request.tools = conversation["tools"];
    request.add_generation_prompt = c["add_generation_prompt"].get<bool>();
    request.special_tokens = c["special_tokens"];
    request.chat_template_kwargs = c["chat_template_kwargs"];
    try {
      apply_chat_template(real_template(c["template"].get<std::string>()), request,
                          fixed_clock_options());
      ADD_FAILURE() << "no error for " << c["template"] << " " << c["conversation"];
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), c["error"].get<std::string>().substr(15));
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace ctxpar::chat_template
