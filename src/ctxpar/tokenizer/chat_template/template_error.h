// Errors raised while a template renders, before the interpreter knows where they happened.
// The interpreter catches them at the node being evaluated and rethrows a ctxpar::InputError that
// names the template, line and column; no caller outside this folder sees these types.
#pragma once

#include <stdexcept>
#include <string>

namespace ctxpar::chat_template {

// A Python/jinja2 TypeError, UndefinedError, ValueError... : `what()` is the message jinja2
// would give, without a location.
class TemplateError : public std::runtime_error {
 public:
  explicit TemplateError(const std::string& message) : std::runtime_error(message) {}
};

// raise_exception(message) in a template: the message reaches the caller unchanged.
class TemplateRaised : public std::runtime_error {
 public:
  explicit TemplateRaised(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace ctxpar::chat_template
