// loops_over_message_content: vLLM's "auto" chat template content format test
// (vllm/entrypoints/chat_utils.py _detect_content_format). The expected answers are what vLLM's
// check gives on the same templates (run with jinja2 3.1): the real templates of
// tests/fixtures/chat_templates, and small ones for each rule.
#include "ctxpar/tokenizer/chat_template/content_loops.h"

#include <gtest/gtest.h>

#include "chat_template/fixtures.h"
#include "ctxpar/tokenizer/chat_template/chat_template.h"

namespace ctxpar::chat_template {
namespace {

TEST(ContentLoops, RealTemplatesAsVllmDetectsThem) {
  // GLM's templates loop over a tool message's content (`for tr in m.content`): "openai", which
  // is why GLM-5's vLLM recipe sets --chat-template-content-format=string.
  const std::pair<const char*, bool> templates[] = {
      {"GLM-4.6.jinja", true},
      {"GLM-4.7-Flash.jinja", true},
      {"zai-org-GLM-5.jinja", true},
      {"Qwen-QwQ-32B.jinja", false},
      {"Qwen-Qwen2.5-7B-Instruct.jinja", false},
      {"Qwen-Qwen3-0.6B.jinja", false},
      {"deepseek-ai-DeepSeek-R1-0528.jinja", false},
      {"deepseek-ai-DeepSeek-V3.1.jinja", false},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", false},
  };
  for (const auto& [file, loops] : templates) {
    const ChatTemplate t =
        ChatTemplate::parse(testing::read_fixture_text(std::string("templates/") + file), file);
    EXPECT_EQ(t.loops_over_message_content(), loops) << file;
  }
}

TEST(ContentLoops, VllmsRules) {
  const std::pair<const char*, bool> cases[] = {
      // Loops over m.content / m['content'] of a loop over messages, through filters, slices,
      // aliases set from messages, loop conditions, parentheses, macros and else branches.
      {"{% for message in messages %}{% for part in message['content'] %}{{ part.text }}{% endfor "
       "%}{% endfor %}",
       true},
      {"{% for m in messages %}{% for p in m.content | selectattr('type', 'eq', 'text') %}{% "
       "endfor %}{% endfor %}",
       true},
      {"{% set msgs = messages[1:] %}{% for m in msgs %}{% for p in m.content %}{% endfor %}{% "
       "endfor %}",
       true},
      {"{% set a = messages | list %}{% set b = a %}{% for m in b %}{% for p in m['content'] %}{% "
       "endfor %}{% endfor %}",
       true},
      {"{% for m in messages if m.role == 'user' %}{% for p in m.content if p.type == 'text' %}{% "
       "endfor %}{% endfor %}",
       true},
      {"{% for m in messages %}{% if m.content is string %}{{ m.content }}{% else %}{% for p in "
       "m.content %}{{ p.text }}{% endfor %}{% endif %}{% endfor %}",
       true},
      {"{% for m in messages %}{% for p in (m.content) %}{% endfor %}{% endfor %}", true},
      {"{% macro f(messages) %}{% for m in messages %}{% for p in m.content %}{% endfor %}{% "
       "endfor %}{% endmacro %}",
       true},
      {"{% for m in messages %}{% for p in m.content[1:] %}{% endfor %}{% else %}{% endfor %}",
       true},
      {"{% for m in messages %}{{ m.content }}{% endfor %}", false},
      {"{% for m in messages %}{% set c = m.content %}{% for p in c %}{% endfor %}{% endfor %}",
       false},
      {"{% for a, b in messages %}{% for p in a.content %}{% endfor %}{% endfor %}", false},
      {"{% for p in messages[0].content %}{% endfor %}", false},
      {"{% set ns = namespace(x=1) %}{% set ns.x = messages %}{% for m in messages %}{% for p in "
       "m.content %}{% endfor %}{% endfor %}",
       false},
      {"{% for m in messages %}{% for p in m.contents %}{% endfor %}{% endfor %}", false},
      {"{% for m in conversation %}{% for p in m.content %}{% endfor %}{% endfor %}", false},
      {"{% set a, b = messages, 1 %}{% for m in messages %}{% for p in m.content %}{% endfor %}{% "
       "endfor %}",
       true},
      {"{% for m in messages %}{% for p in m.content %}{% endfor %}{% endfor %}{% for x, y in "
       "messages %}{% endfor %}",
       false},
      {"{% for m in messages %}{% for k, v in m.content %}{% endfor %}{% endfor %}", false},
  };
  for (const auto& [source, loops] : cases) {
    EXPECT_EQ(ChatTemplate::parse(source, "t.jinja").loops_over_message_content(), loops) << source;
  }
}

TEST(ContentLoops, ACycleOfSetsEnds) {
  // vLLM's search loops forever here; each name is followed once.
  EXPECT_TRUE(
      ChatTemplate::parse("{% set a = messages %}{% set b = a %}{% set a = b %}"
                          "{% for m in a %}{% for p in m.content %}{% endfor %}{% endfor %}",
                          "t.jinja")
          .loops_over_message_content());
}

}  // namespace
}  // namespace ctxpar::chat_template
