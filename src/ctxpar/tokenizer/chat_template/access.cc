#include "ctxpar/tokenizer/chat_template/access.h"

#include <algorithm>

#include <fmt/format.h>

#include "ctxpar/tokenizer/chat_template/python_text.h"
#include "ctxpar/tokenizer/chat_template/template_error.h"

namespace ctxpar::chat_template {
namespace {

bool contains(std::initializer_list<std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Python's attribute names of the builtin types: jinja2 looks these up before the items.
bool is_str_method(std::string_view n) {
  return contains(
      {"capitalize",   "casefold",    "center",    "count",      "encode",       "endswith",
       "expandtabs",   "find",        "format",    "format_map", "index",        "isalnum",
       "isalpha",      "isascii",     "isdecimal", "isdigit",    "isidentifier", "islower",
       "isnumeric",    "isprintable", "isspace",   "istitle",    "isupper",      "join",
       "ljust",        "lower",       "lstrip",    "maketrans",  "partition",    "removeprefix",
       "removesuffix", "replace",     "rfind",     "rindex",     "rjust",        "rpartition",
       "rsplit",       "rstrip",      "split",     "splitlines", "startswith",   "strip",
       "swapcase",     "title",       "translate", "upper",      "zfill"},
      n);
}
bool is_dict_method(std::string_view n) {
  return contains({"clear", "copy", "fromkeys", "get", "items", "keys", "pop", "popitem",
                   "setdefault", "update", "values"},
                  n);
}
bool is_list_method(std::string_view n, bool tuple) {
  if (tuple) return contains({"count", "index"}, n);
  return contains({"append", "clear", "copy", "count", "extend", "index", "insert", "pop", "remove",
                   "reverse", "sort"},
                  n);
}

Value bound_method(const Value& self, std::string_view name) {
  auto c = std::make_shared<Callable>();
  c->kind = Callable::Kind::kMethod;
  c->name = std::string(name);
  c->self = self;
  return Value(std::shared_ptr<const Callable>(std::move(c)));
}

Value missing_attribute(const Value& object, std::string_view name) {
  return Value::undefined(
      fmt::format("'{}' has no attribute '{}'", object_type_repr(object), name));
}

Value loop_attribute(const Value& loop_value, std::string_view name) {
  const LoopInfo& loop = loop_value.as_loop();
  const int64_t i = loop.index0, n = loop.length;
  if (name == "index") return Value(i + 1);
  if (name == "index0") return Value(i);
  if (name == "revindex") return Value(n - i);
  if (name == "revindex0") return Value(n - i - 1);
  if (name == "first") return Value(i == 0);
  if (name == "last") return Value(i == n - 1);
  if (name == "length") return Value(n);
  if (name == "depth") return Value(1);
  if (name == "depth0") return Value(0);
  if (name == "previtem") {
    if (i == 0) return Value::undefined("there is no previous item");
    return loop.items->items[i - 1];
  }
  if (name == "nextitem") {
    if (i + 1 >= n) return Value::undefined("there is no next item");
    return loop.items->items[i + 1];
  }
  if (name == "cycle" || name == "changed") return bound_method(loop_value, name);
  return missing_attribute(loop_value, name);
}

// Python's slice.indices() and the selected positions.
std::vector<size_t> slice_positions(size_t size, const Value* start, const Value* stop,
                                    const Value* step) {
  auto as_index = [](const Value* v) -> std::optional<int64_t> {
    if (!v || v->is_none()) return std::nullopt;
    if (v->is_undefined()) throw TemplateError(v->undefined_hint());
    if (!v->is_int() && !v->is_bool()) {
      throw TemplateError("slice indices must be integers or None or have an __index__ method");
    }
    return v->as_int();
  };
  const int64_t n = static_cast<int64_t>(size);
  const int64_t st = as_index(step).value_or(1);
  if (st == 0) throw TemplateError("slice step cannot be zero");
  auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v) return fallback;
    int64_t x = *v < 0 ? *v + n : *v;
    if (st > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  const int64_t b = clamp(as_index(start), st > 0 ? 0 : n - 1);
  const int64_t e = clamp(as_index(stop), st > 0 ? n : -1);
  std::vector<size_t> out;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) out.push_back(static_cast<size_t>(i));
  return out;
}

}  // namespace

Value get_attribute(const Value& object, std::string_view name) {
  switch (object.kind()) {
    case Value::Kind::kUndefined:
      throw TemplateError(object.undefined_hint());
    case Value::Kind::kString:
      if (is_str_method(name)) return bound_method(object, name);
      return missing_attribute(object, name);
    case Value::Kind::kDict: {
      if (is_dict_method(name)) return bound_method(object, name);
      const Value* v = object.as_dict().find(name);
      return v ? *v : missing_attribute(object, name);
    }
    case Value::Kind::kList:
      if (is_list_method(name, object.is_tuple())) return bound_method(object, name);
      return missing_attribute(object, name);
    case Value::Kind::kNamespace: {
      const Value* v = object.as_namespace().attrs.find(name);
      return v ? *v : missing_attribute(object, name);
    }
    case Value::Kind::kLoop:
      return loop_attribute(object, name);
    default:
      return missing_attribute(object, name);
  }
}

Value get_item(const Value& object, const Value& key) {
  if (object.is_undefined()) throw TemplateError(object.undefined_hint());
  if (key.is_undefined()) throw TemplateError(key.undefined_hint());
  if (object.is_dict() && key.is_string()) {
    const Value* v = object.as_dict().find(key.as_string());
    if (v) return *v;
  }
  if ((object.is_list() || object.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.as_int();
    if (object.is_list()) {
      const int64_t n = static_cast<int64_t>(object.items().size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return object.items()[static_cast<size_t>(i)];
    } else {
      const std::u32string cps = decode_utf8(object.as_string());
      const int64_t n = static_cast<int64_t>(cps.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return Value(encode_utf8(cps.substr(static_cast<size_t>(i), 1)));
    }
  }
  if (key.is_string()) {
    // jinja2 falls back to the attribute for string keys (`text['strip']`, `ns['x']`).
    return get_attribute(object, key.as_string());
  }
  return Value::undefined(fmt::format("{} has no element {}", object_type_repr(object), repr(key)));
}

Value get_slice(const Value& object, const Value* start, const Value* stop, const Value* step) {
  if (object.is_undefined()) throw TemplateError(object.undefined_hint());
  if (object.is_list()) {
    std::vector<Value> out;
    for (size_t i : slice_positions(object.items().size(), start, stop, step)) {
      out.push_back(object.items()[i]);
    }
    return object.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  if (object.is_string()) {
    const std::u32string cps = decode_utf8(object.as_string());
    std::u32string out;
    for (size_t i : slice_positions(cps.size(), start, stop, step)) out.push_back(cps[i]);
    return Value(encode_utf8(out));
  }
  // dict[slice] and None[slice] raise TypeError, which jinja2 turns into Undefined.
  return Value::undefined(fmt::format("{} has no element slice", object_type_repr(object)));
}

std::vector<Value> iterate(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return {};
    case Value::Kind::kList:
      return value.items();
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& [k, v] : value.as_dict().entries()) keys.emplace_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      for (char32_t c : decode_utf8(value.as_string())) {
        chars.emplace_back(encode_utf8(std::u32string(1, c)));
      }
      return chars;
    }
    default:
      throw TemplateError(fmt::format("'{}' object is not iterable", python_type_name(value)));
  }
}

bool contains(const Value& container, const Value& item) {
  if (container.is_undefined()) throw TemplateError(container.undefined_hint());
  if (item.is_undefined()) throw TemplateError(item.undefined_hint());
  switch (container.kind()) {
    case Value::Kind::kString:
      if (!item.is_string()) {
        throw TemplateError(fmt::format("'in <string>' requires string as left operand, not {}",
                                        python_type_name(item)));
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : container.items()) {
        if (equals(v, item)) return true;
      }
      return false;
    case Value::Kind::kDict:
      return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    default:
      throw TemplateError(
          fmt::format("argument of type '{}' is not iterable", python_type_name(container)));
  }
}

int64_t length_of(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
      return 0;
    case Value::Kind::kString:
      return static_cast<int64_t>(count_code_points(value.as_string()));
    case Value::Kind::kList:
      return static_cast<int64_t>(value.items().size());
    case Value::Kind::kDict:
      return static_cast<int64_t>(value.as_dict().size());
    default:
      throw TemplateError(fmt::format("object of type '{}' has no len()", python_type_name(value)));
  }
}

}  // namespace ctxpar::chat_template
