// jinja2's built-in tests (`value is name(args)`): defined, none, string, mapping, ...
#pragma once

#include <string>
#include <string_view>

#include "ctxpar/tokenizer/chat_template/call_args.h"
#include "ctxpar/tokenizer/chat_template/filters.h"
#include "ctxpar/tokenizer/chat_template/value.h"

namespace ctxpar::chat_template {

BuiltinSupport test_support(std::string_view name);
std::string supported_test_names();

// subject is name(args). Throws TemplateError for bad arguments.
bool apply_test(std::string_view name, const Value& subject, const CallArgs& args);

}  // namespace ctxpar::chat_template
