// Whether a template loops over a message's content: vLLM's test for its "auto" chat template
// content format (vllm/entrypoints/chat_utils.py _detect_content_format). A template that does
// is given list-of-parts content ("openai"), any other the parts joined into text ("string").
#pragma once

#include "ctxpar/tokenizer/chat_template/ast.h"

namespace ctxpar::chat_template {

// vLLM's rule on the parsed template: the names of the messages are `messages` and every
// variable set from it ({% set x = messages %}, through filters, tests and slices too); the
// names of a message are the targets of `for` loops over those; the template loops over content
// when a `for` loop iterates `m.content` or `m['content']` (or a filter, test or slice of it) of
// such a name. A tuple target or namespace attribute where vLLM expects a name makes vLLM's check
// fail, and it then answers false, as this does. (vLLM would loop forever on a cycle of sets,
// `{% set a = b %}{% set b = a %}`; here each name is followed once.)
bool loops_over_message_content(const Body& body);

}  // namespace ctxpar::chat_template
