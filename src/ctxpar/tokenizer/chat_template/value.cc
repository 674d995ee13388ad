#include "ctxpar/tokenizer/chat_template/value.h"

#include <fmt/format.h>

#include <algorithm>

#include "ctxpar/tokenizer/chat_template/python_text.h"
#include "ctxpar/tokenizer/chat_template/template_error.h"

namespace ctxpar::chat_template {

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries_) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Dict::set(std::string key, Value value) {
  for (auto& [k, v] : entries_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

Value Value::undefined(std::string hint) {
  Value v;
  v.v_ = Undefined{std::make_shared<const std::string>(std::move(hint))};
  return v;
}

namespace {

int deepest(int depth) {
  if (depth + 1 > kMaxValueDepth) {
    throw TemplateError(fmt::format("values nest more than {} levels deep", kMaxValueDepth));
  }
  return depth + 1;
}

Value make_list(std::vector<Value> items, bool tuple) {
  int depth = 0;
  for (const Value& v : items) depth = std::max(depth, nesting_depth(v));
  depth = deepest(depth);
  return Value(std::make_shared<const ListData>(ListData{std::move(items), tuple, depth}));
}

}  // namespace

Value Value::list(std::vector<Value> items) {
  return make_list(std::move(items), false);
}
Value Value::tuple(std::vector<Value> items) {
  return make_list(std::move(items), true);
}

Value Value::dict(Dict d) {
  int depth = 0;
  for (const auto& [k, v] : d.entries()) depth = std::max(depth, nesting_depth(v));
  deepest(depth);
  return Value(std::make_shared<const Dict>(std::move(d)));
}

int nesting_depth(const Value& v) {
  auto deepest_entry = [](const Dict& d) {
    int depth = 0;
    for (const auto& [k, e] : d.entries()) depth = std::max(depth, nesting_depth(e));
    return depth + 1;
  };
  switch (v.kind()) {
    case Value::Kind::kList:
      return v.list_data().depth;
    case Value::Kind::kDict:
      return deepest_entry(v.as_dict());
    case Value::Kind::kNamespace:
      return deepest_entry(v.as_namespace().attrs);
    default:
      return 0;
  }
}

bool holds_namespace(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kNamespace:
    case Value::Kind::kLoop:  // its items may hold one
      return true;
    case Value::Kind::kList:
      for (const Value& e : v.items()) {
        if (holds_namespace(e)) return true;
      }
      return false;
    case Value::Kind::kDict:
      for (const auto& [k, e] : v.as_dict().entries()) {
        if (holds_namespace(e)) return true;
      }
      return false;
    default:
      return false;
  }
}

int64_t Value::as_int() const {
  return is_bool() ? (as_bool() ? 1 : 0) : std::get<int64_t>(v_);
}

double Value::as_double() const {
  return is_float() ? std::get<double>(v_) : static_cast<double>(as_int());
}

std::string Value::undefined_hint() const {
  const auto& hint = std::get<Undefined>(v_).hint;
  return hint ? *hint : "value is undefined";
}

std::string python_type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "NoneType";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kString:
      return "str";
    case Value::Kind::kList:
      return v.is_tuple() ? "tuple" : "list";
    case Value::Kind::kDict:
      return "dict";
    case Value::Kind::kNamespace:
      return "Namespace";
    case Value::Kind::kLoop:
      return "LoopContext";
    case Value::Kind::kCallable:
      return v.as_callable().kind == Callable::Kind::kMacro ? "Macro" : "function";
  }
  return "object";
}

std::string object_type_repr(const Value& v) {
  if (v.is_none()) return "None";
  return python_type_name(v) + " object";
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return false;
    case Value::Kind::kBool:
      return v.as_bool();
    case Value::Kind::kInt:
      return v.as_int() != 0;
    case Value::Kind::kFloat:
      return v.as_double() != 0.0;
    case Value::Kind::kString:
      return !v.as_string().empty();
    case Value::Kind::kList:
      return !v.items().empty();
    case Value::Kind::kDict:
      return v.as_dict().size() != 0;
    default:
      return true;
  }
}

namespace {

std::string repr_dict_body(const Dict& d) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, val] : d.entries()) {
    if (!first) out += ", ";
    first = false;
    out += python_repr_string(k) + ": " + repr(val);
  }
  return out + "}";
}

}  // namespace

std::string repr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kString:
      return python_repr_string(v.as_string());
    case Value::Kind::kList: {
      const bool tuple = v.is_tuple();
      std::string out = tuple ? "(" : "[";
      const auto& items = v.items();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        out += repr(items[i]);
      }
      if (tuple && items.size() == 1) out += ",";
      return out + (tuple ? ")" : "]");
    }
    case Value::Kind::kDict:
      return repr_dict_body(v.as_dict());
    default:
      return to_str(v);
  }
}

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt:
      return std::to_string(v.as_int());
    case Value::Kind::kFloat:
      return python_float_repr(v.as_double());
    case Value::Kind::kString:
      return v.as_string();
    case Value::Kind::kNamespace:
      return "<Namespace " + repr_dict_body(v.as_namespace().attrs) + ">";
    case Value::Kind::kLoop:
      return fmt::format("<LoopContext {}/{}>", v.as_loop().index0 + 1, v.as_loop().length);
    case Value::Kind::kCallable: {
      const Callable& c = v.as_callable();
      if (c.kind == Callable::Kind::kMacro) return fmt::format("<Macro '{}'>", c.name);
      return fmt::format("<built-in function {}>", c.name);
    }
    default:
      return repr(v);
  }
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.as_string() == b.as_string();
    case Value::Kind::kList: {
      if (a.is_tuple() != b.is_tuple() || a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i) {
        if (!equals(a.items()[i], b.items()[i])) return false;
      }
      return true;
    }
    case Value::Kind::kDict: {
      const Dict& da = a.as_dict();
      const Dict& db = b.as_dict();
      if (da.size() != db.size()) return false;
      for (const auto& [k, v] : da.entries()) {
        const Value* other = db.find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    case Value::Kind::kNamespace:
      return &a.as_namespace() == &b.as_namespace();
    case Value::Kind::kLoop:
      return &a.as_loop() == &b.as_loop();
    case Value::Kind::kCallable:
      return &a.as_callable() == &b.as_callable();
    default:
      return false;
  }
}

int compare(const Value& a, const Value& b, std::string_view op) {
  if (a.is_undefined()) throw TemplateError(a.undefined_hint());
  if (b.is_undefined()) throw TemplateError(b.undefined_hint());
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) {
      const double x = a.as_double(), y = b.as_double();
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    const int64_t x = a.as_int(), y = b.as_int();
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (a.is_string() && b.is_string()) {
    // UTF-8 byte order is code point order.
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
    const auto& x = a.items();
    const auto& y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i])) return compare(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
  }
  throw TemplateError(fmt::format("'{}' not supported between instances of '{}' and '{}'", op,
                                  python_type_name(a), python_type_name(b)));
}

}  // namespace ctxpar::chat_template
