// Methods templates call on values: str (startswith, split, strip, replace, format, ...),
// dict (items, keys, values, get), list/tuple (count, index) and loop.cycle. Mutating methods
// (list.append, dict.update, ...) are refused as jinja2's ImmutableSandboxedEnvironment
// refuses them.
#pragma once

#include "ctxpar/tokenizer/chat_template/budget.h"
#include "ctxpar/tokenizer/chat_template/call_args.h"
#include "ctxpar/tokenizer/chat_template/value.h"

namespace ctxpar::chat_template {

// Calls a Callable of kind kMethod. Throws TemplateError for bad arguments or a method this
// renderer does not implement (naming it).
Value call_method(const Callable& method, const CallArgs& args, Budget& budget);

}  // namespace ctxpar::chat_template
