// jinja2's built-in filters (`value | name(args)`) with HF's tojson override.
#pragma once

#include <string>
#include <string_view>

#include "ctxpar/tokenizer/chat_template/budget.h"
#include "ctxpar/tokenizer/chat_template/call_args.h"
#include "ctxpar/tokenizer/chat_template/value.h"

namespace ctxpar::chat_template {

enum class BuiltinSupport { kSupported, kNotSupported, kUnknown };

// kNotSupported: a jinja2 filter this renderer does not implement; kUnknown: not a jinja2
// filter at all. The parser rejects both.
BuiltinSupport filter_support(std::string_view name);
// "abs, attr, capitalize, ..." for error messages.
std::string supported_filter_names();

// subject | name(args). Throws TemplateError as jinja2 would raise (bad argument types,
// Undefined where a value is needed).
Value apply_filter(std::string_view name, const Value& subject, const CallArgs& args,
                   Budget& budget);

}  // namespace ctxpar::chat_template
