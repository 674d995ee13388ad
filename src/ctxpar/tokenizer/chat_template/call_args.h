// The arguments of a call, filter, test or method, and their binding to a Python signature.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ctxpar/tokenizer/chat_template/value.h"

namespace ctxpar::chat_template {

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

// Binds CallArgs to parameters by position and by name, as Python does. Throws TemplateError
// for too many positional arguments, an unknown keyword or a parameter given twice; `what`
// names the callee in those messages ("filter 'tojson'", "str.split").
class ArgBinder {
 public:
  ArgBinder(const CallArgs& args, std::string_view what,
            std::initializer_list<std::string_view> params);
  // Parameter i, or null when the call did not give it.
  const Value* get(size_t i) const { return bound_[i]; }
  Value get_or(size_t i, Value fallback) const { return bound_[i] ? *bound_[i] : fallback; }
  // Parameter i as an int / bool / string; throws TemplateError naming the parameter when
  // given with another type.
  int64_t int_or(size_t i, int64_t fallback) const;
  bool bool_or(size_t i, bool fallback) const;
  const std::string* string_or_null(size_t i) const;  // null when absent or None

 private:
  std::string what_;
  std::vector<std::string_view> names_;
  std::vector<const Value*> bound_;
};

}  // namespace ctxpar::chat_template
