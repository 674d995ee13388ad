#include "ctxpar/tokenizer/chat_template/call_args.h"

#include <fmt/format.h>

#include "ctxpar/tokenizer/chat_template/template_error.h"

namespace ctxpar::chat_template {

ArgBinder::ArgBinder(const CallArgs& args, std::string_view what,
                     std::initializer_list<std::string_view> params)
    : what_(what), names_(params), bound_(params.size(), nullptr) {
  if (args.positional.size() > names_.size()) {
    throw TemplateError(fmt::format("{} takes at most {} argument(s), {} given", what_,
                                    names_.size(), args.positional.size()));
  }
  for (size_t i = 0; i < args.positional.size(); ++i) bound_[i] = &args.positional[i];
  for (const auto& [name, value] : args.keywords) {
    size_t i = 0;
    while (i < names_.size() && names_[i] != name) ++i;
    if (i == names_.size()) {
      throw TemplateError(fmt::format("{} got an unexpected keyword argument '{}'", what_, name));
    }
    if (bound_[i]) {
      throw TemplateError(fmt::format("{} got multiple values for argument '{}'", what_, name));
    }
    bound_[i] = &value;
  }
}

int64_t ArgBinder::int_or(size_t i, int64_t fallback) const {
  if (!bound_[i]) return fallback;
  if (!bound_[i]->is_int() && !bound_[i]->is_bool()) {
    throw TemplateError(fmt::format("{}: argument '{}' must be an int, not {}", what_, names_[i],
                                    python_type_name(*bound_[i])));
  }
  return bound_[i]->as_int();
}

bool ArgBinder::bool_or(size_t i, bool fallback) const {
  return bound_[i] ? truthy(*bound_[i]) : fallback;
}

const std::string* ArgBinder::string_or_null(size_t i) const {
  if (!bound_[i] || bound_[i]->is_none()) return nullptr;
  if (!bound_[i]->is_string()) {
    throw TemplateError(fmt::format("{}: argument '{}' must be a str, not {}", what_, names_[i],
                                    python_type_name(*bound_[i])));
  }
  return &bound_[i]->as_string();
}

}  // namespace ctxpar::chat_template
