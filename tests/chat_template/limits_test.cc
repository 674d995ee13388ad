// Hostile templates end with a clear Error instead of looping, recursing or allocating without
// bound.
#include <gtest/gtest.h>

#include "ctxpar/core/error.h"
#include "ctxpar/tokenizer/chat_template/chat_template.h"

namespace ctxpar::chat_template {
namespace {

std::string render_error(const std::string& source, const RenderOptions& options = {}) {
  try {
    ChatTemplate::parse(source, "hostile.jinja").render(nlohmann::ordered_json::object(), options);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "rendered without error: " << source;
  return "";
}

RenderOptions small_limits() {
  RenderOptions o;
  o.limits.max_steps = 100'000;
  o.limits.max_output_bytes = 1 << 20;
  o.limits.max_call_depth = 30;
  return o;
}

TEST(ChatTemplateLimits, NestedLoopsStopAtTheStepLimit) {
  const std::string m = render_error(
      "{% for i in range(1000) %}{% for j in range(1000) %}{{ j }}{% endfor %}{% endfor %}",
      small_limits());
  EXPECT_NE(m.find("more than 100000 steps"), std::string::npos) << m;
}

TEST(ChatTemplateLimits, HugeRangeIsRefusedBeforeBuildingIt) {
  // With the default limits: range(10**15) must not allocate 10**15 items first.
  const std::string m = render_error("{% for i in range(1000000000000000) %}{% endfor %}");
  EXPECT_NE(m.find("steps"), std::string::npos) << m;
}

TEST(ChatTemplateLimits, UnboundedMacroRecursion) {
  const std::string m =
      render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", small_limits());
  EXPECT_NE(m.find("nest deeper than 30"), std::string::npos) << m;
}

TEST(ChatTemplateLimits, OutputSize) {
  std::string m = render_error(
      "{% set s = 'x' * 1000 %}{% for i in range(5000) %}{{ s }}{% endfor %}", small_limits());
  EXPECT_NE(m.find("limit of 1048576"), std::string::npos) << m;
  // Doubling a string in a namespace passes the limit long before memory runs out.
  m = render_error(
      "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
      "{% endfor %}",
      small_limits());
  EXPECT_NE(m.find("limit"), std::string::npos) << m;
  m = render_error("{{ 'ab' * 100000000000 }}");
  EXPECT_NE(m.find("limit"), std::string::npos) << m;
  m = render_error("{{ [1, 2] * 100000000000 }}");
  EXPECT_NE(m.find("limit"), std::string::npos) << m;
  m = render_error("{{ {'a': [1, [2]]} | tojson(indent=100000000) }}", small_limits());
  EXPECT_NE(m.find("limit"), std::string::npos) << m;
}

TEST(ChatTemplateLimits, DeepNestingIsAParseErrorNotAStackOverflow) {
  const std::string parens = std::string(100000, '(') + "1" + std::string(100000, ')');
  EXPECT_THROW(ChatTemplate::parse("{{ " + parens + " }}", "deep.jinja"), InputError);
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  for (int i = 0; i < 5000; ++i) ifs += "{% endif %}";
  EXPECT_THROW(ChatTemplate::parse(ifs, "deep.jinja"), InputError);
  EXPECT_THROW(ChatTemplate::parse("{{ " + std::string(100000, '-') + "1 }}", "deep.jinja"),
               InputError);
  EXPECT_THROW(ChatTemplate::parse("{{ " + std::string(50000, '[') + " }}", "deep.jinja"),
               InputError);
  // Nesting the renderer allows still works.
  EXPECT_EQ(ChatTemplate::parse("{{ " + std::string(50, '(') + "1" + std::string(50, ')') + " }}",
                                "ok.jinja")
                .render(nlohmann::ordered_json::object()),
            "1");
}

TEST(ChatTemplateLimits, DeepContextIsRefused) {
  nlohmann::ordered_json deep = 1;
  for (int i = 0; i < 2000; ++i) deep = nlohmann::ordered_json::array({deep});
  const ChatTemplate t = ChatTemplate::parse("{{ x|length }}", "ctx.jinja");
  EXPECT_THROW(t.render({{"x", deep}}), InputError);
}

}  // namespace
}  // namespace ctxpar::chat_template
