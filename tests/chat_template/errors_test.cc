// Errors a template author or a user sees: at parse time for unsupported or malformed
// templates (naming the file, line, column and the feature), at render time with the location
// of the failing expression, and raise_exception's own message.
#include <gtest/gtest.h>

#include "chat_template/fixtures.h"
#include "ctxpar/core/error.h"

namespace ctxpar::chat_template {
namespace {

// The message of the Error that parsing `source` throws (fails the test if none).
std::string parse_error(const std::string& source) {
  try {
    ChatTemplate::parse(source, "my_template.jinja");
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "parsed without error: " << source;
  return "";
}

std::string render_error(const std::string& source, const nlohmann::ordered_json& context = {}) {
  const ChatTemplate t = ChatTemplate::parse(source, "my_template.jinja");
  try {
    t.render(context.is_null() ? nlohmann::ordered_json::object() : context);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "rendered without error: " << source;
  return "";
}

void expect_contains(const std::string& text, const std::string& part) {
  EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

TEST(ChatTemplateErrors, UnsupportedTagNamesFileLineColumnAndTag) {
  const std::string m = parse_error("hello\n  {% include 'other.jinja' %}");
  expect_contains(m, "my_template.jinja:2:6");
  expect_contains(m, "'include'");
  expect_contains(m, "not supported");
  expect_contains(m, "supported tags:");
}

TEST(ChatTemplateErrors, UnknownTag) {
  const std::string m = parse_error("{% if x %}{% frobnicate %}{% endif %}");
  expect_contains(m, "my_template.jinja:1:14");
  expect_contains(m, "unknown tag 'frobnicate'");
}

TEST(ChatTemplateErrors, UnknownAndUnsupportedFilters) {
  std::string m = parse_error("{{ x }}\n{{ x | frobnicate }}");
  expect_contains(m, "my_template.jinja:2:8");
  expect_contains(m, "no filter named 'frobnicate'");
  expect_contains(m, "tojson");  // the list of what is supported
  m = parse_error("{{ x | wordwrap(5) }}");
  expect_contains(m, "jinja2 filter 'wordwrap' is not supported");
  // At parse time even where the filter is never reached.
  parse_error("{% if false %}{{ x | urlize }}{% endif %}");
}

TEST(ChatTemplateErrors, UnknownTest) {
  const std::string m = parse_error("{% if x is frobnicated %}{% endif %}");
  expect_contains(m, "my_template.jinja:1:12");
  expect_contains(m, "no test named 'frobnicated'");
}

TEST(ChatTemplateErrors, UnterminatedBlocksNameTheOpeningTag) {
  std::string m = parse_error("a\nb {% for m in messages %}\n{{ m }}\n");
  expect_contains(m, "my_template.jinja:2:3");
  expect_contains(m, "'for' block");
  expect_contains(m, "'endfor'");
  m = parse_error("{% if a %}x{% elif b %}y{% else %}z");
  expect_contains(m, "'if' block");
  m = parse_error("{% macro f() %}body");
  expect_contains(m, "'endmacro'");
  m = parse_error("{% set x %}body");
  expect_contains(m, "'endset'");
  m = parse_error("{% generation %}body");
  expect_contains(m, "'endgeneration'");
}

TEST(ChatTemplateErrors, UnterminatedTagsCommentsAndStrings) {
  expect_contains(parse_error("ok\n   {{ x "), "my_template.jinja:2:4");
  expect_contains(parse_error("{% if x "), "has no '%}'");
  expect_contains(parse_error("{# never"), "missing end of comment");
  expect_contains(parse_error("{{ 'abc }}"), "unterminated string");
  expect_contains(parse_error("{% raw %}abc"), "endraw");
}

TEST(ChatTemplateErrors, StrayEndTagsAndSyntax) {
  expect_contains(parse_error("{% endif %}"), "unexpected 'endif'");
  expect_contains(parse_error("{% for x in y %}{% endif %}{% endfor %}"), "unexpected 'endif'");
  expect_contains(parse_error("{{ 1 + }}"), "expected an expression");
  expect_contains(parse_error("{{ (1 }}"), "unexpected '}'");
  expect_contains(parse_error("{{ a ? b }}"), "unexpected character '?'");
  expect_contains(parse_error("{% break %}"), "outside of a for loop");
  expect_contains(parse_error("{% for x in xs recursive %}{% endfor %}"), "recursive");
  expect_contains(parse_error("{{ f(*args) }}"), "*args");
  expect_contains(parse_error("{{ f(a=1, 2) }}"), "positional argument follows");
}

TEST(ChatTemplateErrors, RaiseExceptionGivesTheTemplatesMessage) {
  const std::string m = render_error(
      "{% if messages|length == 0 %}{{ raise_exception('No messages given!') }}"
      "{% endif %}",
      {{"messages", nlohmann::ordered_json::array()}});
  EXPECT_EQ(m, "No messages given!");
}

TEST(ChatTemplateErrors, RenderErrorsNameTheExpression) {
  std::string m = render_error("line one\n  {{ 'x' ~ foo.bar }}");
  expect_contains(m, "my_template.jinja:2:");
  expect_contains(m, "'foo' is undefined");
  m = render_error("{% for x in items %}{{ x + 1 }}{% endfor %}", {{"items", {1, "a"}}});
  expect_contains(m, "my_template.jinja:1:");
  expect_contains(m, "can only concatenate str (not \"int\") to str");
  m = render_error("{{ '%s' % x }}", {{"x", 1}});
  expect_contains(m, "'%' string formatting is not supported");
  m = render_error("{{ 'abc'.zfill(5) }}");
  expect_contains(m, "str.zfill is not supported");
  m = render_error("{{ messages.append(1) }}", {{"messages", nlohmann::ordered_json::array()}});
  expect_contains(m, "unsafe");
}

}  // namespace
}  // namespace ctxpar::chat_template
