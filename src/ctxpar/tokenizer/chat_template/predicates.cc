#include "ctxpar/tokenizer/chat_template/predicates.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "ctxpar/tokenizer/chat_template/access.h"
#include "ctxpar/tokenizer/chat_template/template_error.h"

namespace ctxpar::chat_template {
namespace {

constexpr std::string_view kSupported[] = {
    "boolean", "callable", "defined",  "divisibleby", "eq",       "equalto",     "escaped",
    "even",    "false",    "filter",   "float",       "ge",       "greaterthan", "gt",
    "in",      "integer",  "iterable", "le",          "lessthan", "lower",       "lt",
    "mapping", "ne",       "none",     "number",      "odd",      "sameas",      "sequence",
    "string",  "test",     "true",     "undefined",   "upper"};

const Value& one_argument(std::string_view name, const CallArgs& args) {
  if (args.positional.size() != 1 || !args.keywords.empty()) {
    throw TemplateError(fmt::format("test '{}' takes exactly one argument", name));
  }
  return args.positional[0];
}

void no_arguments(std::string_view name, const CallArgs& args) {
  if (!args.positional.empty() || !args.keywords.empty()) {
    throw TemplateError(fmt::format("test '{}' takes no arguments", name));
  }
}

// Python's % for the odd / even / divisibleby tests (sign of the divisor).
bool divisible(const Value& v, const Value& by) {
  if (v.is_undefined()) throw TemplateError(v.undefined_hint());
  if (!v.is_number() || !by.is_number()) {
    throw TemplateError(fmt::format("unsupported operand type(s) for %: '{}' and '{}'",
                                    python_type_name(v), python_type_name(by)));
  }
  if (v.is_float() || by.is_float()) {
    if (by.as_double() == 0.0) throw TemplateError("float modulo");
    return std::fmod(v.as_double(), by.as_double()) == 0.0;
  }
  if (by.as_int() == 0) throw TemplateError("integer division or modulo by zero");
  return v.as_int() % by.as_int() == 0;
}

bool is_lower_text(const std::string& s, bool lower) {
  bool cased = false;
  for (char c : s) {
    if (c >= 'A' && c <= 'Z') {
      if (lower) return false;
      cased = true;
    } else if (c >= 'a' && c <= 'z') {
      if (!lower) return false;
      cased = true;
    }
  }
  return cased;
}

}  // namespace

BuiltinSupport test_support(std::string_view name) {
  if (std::find(std::begin(kSupported), std::end(kSupported), name) != std::end(kSupported)) {
    return BuiltinSupport::kSupported;
  }
  return BuiltinSupport::kUnknown;
}

std::string supported_test_names() {
  std::string out;
  for (auto n : kSupported) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

bool apply_test(std::string_view name, const Value& v, const CallArgs& args) {
  using K = Value::Kind;
  if (name == "defined" || name == "undefined") {
    no_arguments(name, args);
    return v.is_undefined() == (name == "undefined");
  }
  if (name == "none") return no_arguments(name, args), v.is_none();
  if (name == "boolean") return no_arguments(name, args), v.is_bool();
  if (name == "true" || name == "false") {
    no_arguments(name, args);
    return v.is_bool() && v.as_bool() == (name == "true");
  }
  if (name == "integer") return no_arguments(name, args), v.is_int();
  if (name == "float") return no_arguments(name, args), v.is_float();
  if (name == "number") return no_arguments(name, args), v.is_number();
  if (name == "string") return no_arguments(name, args), v.is_string();
  if (name == "mapping") return no_arguments(name, args), v.is_dict();
  if (name == "iterable" || name == "sequence") {
    // Undefined counts: it has __iter__, __len__ and __getitem__.
    no_arguments(name, args);
    return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict();
  }
  if (name == "callable") {
    no_arguments(name, args);
    return v.kind() == K::kCallable || v.kind() == K::kLoop;
  }
  if (name == "escaped") return no_arguments(name, args), false;  // no Markup values here
  if (name == "lower" || name == "upper") {
    no_arguments(name, args);
    return is_lower_text(to_str(v), name == "lower");
  }
  if (name == "odd" || name == "even") {
    no_arguments(name, args);
    if (!v.is_int() && !v.is_bool() && !v.is_undefined()) {
      // jinja2: value % 2 == 1 also works for floats.
      if (v.is_float()) {
        const double r = std::fmod(std::fmod(v.as_double(), 2.0) + 2.0, 2.0);
        return name == "odd" ? r == 1.0 : r == 0.0;
      }
    }
    const bool even = divisible(v, Value(2));
    return name == "even" ? even : !even;
  }
  if (name == "divisibleby") return divisible(v, one_argument(name, args));
  if (name == "eq" || name == "equalto") return equals(v, one_argument(name, args));
  if (name == "ne") return !equals(v, one_argument(name, args));
  if (name == "lt" || name == "lessthan") return compare(v, one_argument(name, args), "<") < 0;
  if (name == "le") return compare(v, one_argument(name, args), "<=") <= 0;
  if (name == "gt" || name == "greaterthan") return compare(v, one_argument(name, args), ">") > 0;
  if (name == "ge") return compare(v, one_argument(name, args), ">=") >= 0;
  if (name == "in") return contains(one_argument(name, args), v);
  if (name == "sameas") {
    const Value& other = one_argument(name, args);
    if (v.kind() != other.kind()) return false;
    switch (v.kind()) {
      case K::kList:
        return v.list_ptr() == other.list_ptr();
      case K::kDict:
        return &v.as_dict() == &other.as_dict();
      default:
        return equals(v, other);
    }
  }
  if (name == "filter" || name == "test") {
    no_arguments(name, args);
    if (!v.is_string()) return false;
    return (name == "filter" ? filter_support(v.as_string()) : test_support(v.as_string())) ==
           BuiltinSupport::kSupported;
  }
  throw TemplateError(fmt::format("no test named '{}'", name));
}

}  // namespace ctxpar::chat_template
