#include "ctxpar/tokenizer/chat_template/methods.h"

#include <fmt/format.h>

#include "ctxpar/tokenizer/chat_template/access.h"
#include "ctxpar/tokenizer/chat_template/python_text.h"
#include "ctxpar/tokenizer/chat_template/template_error.h"

namespace ctxpar::chat_template {
namespace {

std::string method_name(const Callable& m) {
  return fmt::format("{}.{}", python_type_name(m.self), m.name);
}

const std::string& require_string(const Value& v, const std::string& what) {
  if (v.is_undefined()) throw TemplateError(v.undefined_hint());
  if (!v.is_string()) {
    throw TemplateError(
        fmt::format("{}: expected a str argument, got {}", what, python_type_name(v)));
  }
  return v.as_string();
}

// Code point index of a byte offset (npos -> -1).
int64_t code_point_index(const std::string& s, size_t byte_offset) {
  if (byte_offset == std::string::npos) return -1;
  return static_cast<int64_t>(count_code_points(std::string_view(s).substr(0, byte_offset)));
}

bool affix_matches(const std::string& s, const Value& arg, bool prefix, const std::string& what) {
  auto one = [&](const std::string& a) {
    if (a.size() > s.size()) return false;
    return prefix ? s.compare(0, a.size(), a) == 0
                  : s.compare(s.size() - a.size(), a.size(), a) == 0;
  };
  if (arg.is_tuple()) {
    for (const Value& v : arg.items()) {
      if (one(require_string(v, what))) return true;
    }
    return false;
  }
  return one(require_string(arg, what));
}

std::string replace_all(const std::string& s, const std::string& old, const std::string& repl,
                        int64_t count, Budget& budget) {
  std::string out;
  if (old.empty()) {
    // Python inserts the replacement before every code point and at the end.
    const std::u32string cps = decode_utf8(s);
    int64_t done = 0;
    for (char32_t c : cps) {
      if (count < 0 || done < count) out += repl, ++done;
      append_utf8(out, c);
      budget.check_size(out.size());
    }
    if (count < 0 || done < count) out += repl;
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t hit = s.find(old, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out += repl;
    budget.check_size(out.size());
    pos = hit + old.size();
    ++done;
  }
  out.append(s, pos, std::string::npos);
  return out;
}

// str.format with {} / {0} / {name} fields, !s / !r conversions and no format spec.
std::string python_format(const std::string& fmt_text, const CallArgs& args, Budget& budget) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt_text.size(); ++i) {
    const char c = fmt_text[i];
    if (c == '}') {
      if (i + 1 < fmt_text.size() && fmt_text[i + 1] == '}') {
        out.push_back('}');
        ++i;
        continue;
      }
      throw TemplateError("Single '}' encountered in format string");
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    if (i + 1 < fmt_text.size() && fmt_text[i + 1] == '{') {
      out.push_back('{');
      ++i;
      continue;
    }
    const size_t close = fmt_text.find('}', i);
    if (close == std::string::npos) throw TemplateError("Single '{' encountered in format string");
    std::string field = fmt_text.substr(i + 1, close - i - 1);
    i = close;
    char conversion = 's';
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      if (bang + 2 != field.size()) throw TemplateError("str.format: bad conversion in field");
      conversion = field[bang + 1];
      field.resize(bang);
    }
    if (field.find(':') != std::string::npos) {
      throw TemplateError(
          "str.format format specs ({:...}) are not supported by ctxpar's chat "
          "template renderer");
    }
    const Value* v = nullptr;
    if (field.empty()) {
      if (auto_index >= args.positional.size()) {
        throw TemplateError("Replacement index out of range for positional args tuple");
      }
      v = &args.positional[auto_index++];
    } else if (field.find_first_not_of("0123456789") == std::string::npos) {
      const size_t idx = field.size() > 9 ? args.positional.size() : std::stoul(field);
      if (idx >= args.positional.size()) {
        throw TemplateError("Replacement index out of range for positional args tuple");
      }
      v = &args.positional[idx];
    } else {
      for (const auto& [k, val] : args.keywords) {
        if (k == field) v = &val;
      }
      if (!v) throw TemplateError(fmt::format("KeyError: '{}'", field));
    }
    if (conversion == 'r') {
      out += repr(*v);
    } else if (conversion == 's') {
      out += to_str(*v);
    } else {
      throw TemplateError("str.format: unknown conversion (valid: !s, !r)");
    }
    budget.check_size(out.size());
  }
  return out;
}

bool all_ascii_of(const std::string& s, bool (*pred)(char)) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!pred(c)) return false;
  }
  return true;
}

Value str_method(const Callable& m, const CallArgs& args, Budget& budget) {
  const std::string& s = m.self.as_string();
  const std::string what = method_name(m);
  const std::string& n = m.name;
  if (n == "startswith" || n == "endswith") {
    ArgBinder b(args, what, {"prefix"});
    if (!b.get(0)) throw TemplateError(what + " takes exactly one argument");
    return Value(affix_matches(s, *b.get(0), n == "startswith", what));
  }
  if (n == "split" || n == "rsplit") {
    ArgBinder b(args, what, {"sep", "maxsplit"});
    std::vector<Value> parts;
    for (auto& p : python_split(s, b.string_or_null(0), b.int_or(1, -1), n == "rsplit")) {
      parts.emplace_back(std::move(p));
    }
    return Value::list(std::move(parts));
  }
  if (n == "strip" || n == "lstrip" || n == "rstrip") {
    ArgBinder b(args, what, {"chars"});
    const StripSide side =
        n == "strip" ? StripSide::kBoth : (n == "lstrip" ? StripSide::kLeft : StripSide::kRight);
    return Value(python_strip(s, b.string_or_null(0), side));
  }
  if (n == "replace") {
    ArgBinder b(args, what, {"old", "new", "count"});
    if (!b.get(0) || !b.get(1)) throw TemplateError(what + " needs the old and new strings");
    return Value(replace_all(s, require_string(*b.get(0), what), require_string(*b.get(1), what),
                             b.int_or(2, -1), budget));
  }
  if (n == "upper" || n == "lower" || n == "casefold" || n == "title" || n == "capitalize") {
    ArgBinder b(args, what, {});
    if (n == "upper") return Value(ascii_upper(s));
    if (n == "title") return Value(python_str_title(s));
    if (n == "capitalize") return Value(python_str_capitalize(s));
    return Value(ascii_lower(s));
  }
  if (n == "find" || n == "rfind" || n == "index" || n == "rindex" || n == "count") {
    ArgBinder b(args, what, {"sub"});
    if (!b.get(0)) throw TemplateError(what + " takes exactly one argument");
    const std::string& sub = require_string(*b.get(0), what);
    if (n == "count") {
      if (sub.empty()) return Value(static_cast<int64_t>(count_code_points(s)) + 1);
      int64_t c = 0;
      for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + sub.size())) ++c;
      return Value(c);
    }
    const size_t hit = (n == "find" || n == "index") ? s.find(sub) : s.rfind(sub);
    if (hit == std::string::npos && (n == "index" || n == "rindex")) {
      throw TemplateError("substring not found");
    }
    return Value(code_point_index(s, hit));
  }
  if (n == "join") {
    ArgBinder b(args, what, {"iterable"});
    if (!b.get(0)) throw TemplateError(what + " takes exactly one argument");
    std::string out;
    bool first = true;
    for (const Value& v : iterate(*b.get(0))) {
      if (!first) out += s;
      first = false;
      out += require_string(v, what);
      budget.check_size(out.size());
    }
    return Value(std::move(out));
  }
  if (n == "format") return Value(python_format(s, args, budget));
  if (n == "splitlines") {
    ArgBinder b(args, what, {"keepends"});
    const bool keep = b.bool_or(0, false);
    const std::u32string cps = decode_utf8(s);
    std::vector<Value> lines;
    std::u32string line;
    for (size_t i = 0; i < cps.size(); ++i) {
      if (!is_python_line_break(cps[i])) {
        line.push_back(cps[i]);
        continue;
      }
      std::u32string end(1, cps[i]);
      if (cps[i] == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') end.push_back(cps[++i]);
      lines.emplace_back(encode_utf8(keep ? line + end : line));
      line.clear();
    }
    if (!line.empty()) lines.emplace_back(encode_utf8(line));
    return Value::list(std::move(lines));
  }
  if (n == "removeprefix" || n == "removesuffix") {
    ArgBinder b(args, what, {"affix"});
    if (!b.get(0)) throw TemplateError(what + " takes exactly one argument");
    const std::string& a = require_string(*b.get(0), what);
    if (n == "removeprefix") {
      return Value(s.compare(0, a.size(), a) == 0 ? s.substr(a.size()) : s);
    }
    const bool ends = a.size() <= s.size() && s.compare(s.size() - a.size(), a.size(), a) == 0;
    return Value(ends && !a.empty() ? s.substr(0, s.size() - a.size()) : s);
  }
  if (n == "partition" || n == "rpartition") {
    ArgBinder b(args, what, {"sep"});
    if (!b.get(0)) throw TemplateError(what + " takes exactly one argument");
    const std::string& sep = require_string(*b.get(0), what);
    if (sep.empty()) throw TemplateError("empty separator");
    const size_t hit = n == "partition" ? s.find(sep) : s.rfind(sep);
    if (hit == std::string::npos) {
      if (n == "partition") return Value::tuple({Value(s), Value(""), Value("")});
      return Value::tuple({Value(""), Value(""), Value(s)});
    }
    return Value::tuple({Value(s.substr(0, hit)), Value(sep), Value(s.substr(hit + sep.size()))});
  }
  if (n == "isspace") {
    ArgBinder b(args, what, {});
    const std::u32string cps = decode_utf8(s);
    bool all = !cps.empty();
    for (char32_t c : cps) all = all && is_python_space(c);
    return Value(all);
  }
  if (n == "isdigit" || n == "isalpha" || n == "isalnum" || n == "isascii") {
    // ASCII classification: non-ASCII letters and digits count as neither.
    ArgBinder b(args, what, {});
    if (n == "isascii") {
      for (char c : s) {
        if (static_cast<unsigned char>(c) >= 0x80) return Value(false);
      }
      return Value(true);
    }
    if (n == "isdigit") return Value(all_ascii_of(s, [](char c) { return c >= '0' && c <= '9'; }));
    if (n == "isalpha") {
      return Value(all_ascii_of(s, [](char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }));
    }
    return Value(all_ascii_of(s, [](char c) {
      return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
    }));
  }
  if (n == "isupper" || n == "islower") {
    ArgBinder b(args, what, {});
    bool cased = false;
    for (char c : s) {
      if (c >= 'A' && c <= 'Z') {
        if (n == "islower") return Value(false);
        cased = true;
      } else if (c >= 'a' && c <= 'z') {
        if (n == "isupper") return Value(false);
        cased = true;
      }
    }
    return Value(cased);
  }
  throw TemplateError(
      fmt::format("the method {} is not supported by ctxpar's chat template renderer", what));
}

Value dict_method(const Callable& m, const CallArgs& args) {
  const Dict& d = m.self.as_dict();
  const std::string what = method_name(m);
  if (m.name == "items" || m.name == "keys" || m.name == "values") {
    ArgBinder b(args, what, {});
    std::vector<Value> out;
    for (const auto& [k, v] : d.entries()) {
      if (m.name == "items") {
        out.push_back(Value::tuple({Value(k), v}));
      } else {
        out.push_back(m.name == "keys" ? Value(k) : v);
      }
    }
    return Value::list(std::move(out));
  }
  if (m.name == "get") {
    ArgBinder b(args, what, {"key", "default"});
    if (!b.get(0)) throw TemplateError(what + " expected at least 1 argument, got 0");
    if (b.get(0)->is_string()) {
      if (const Value* v = d.find(b.get(0)->as_string())) return *v;
    }
    return b.get_or(1, Value(None{}));
  }
  if (m.name == "copy") {
    ArgBinder b(args, what, {});
    return m.self;  // values are immutable: the same dict is an exact copy
  }
  throw TemplateError(fmt::format("access to attribute '{}' of 'dict' object is unsafe.", m.name));
}

Value list_method(const Callable& m, const CallArgs& args) {
  const std::string what = method_name(m);
  const auto& items = m.self.items();
  if (m.name == "count" || m.name == "index") {
    ArgBinder b(args, what, {"value"});
    if (!b.get(0)) throw TemplateError(what + " takes exactly one argument");
    int64_t count = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!equals(items[i], *b.get(0))) continue;
      if (m.name == "index") return Value(static_cast<int64_t>(i));
      ++count;
    }
    if (m.name == "index") throw TemplateError(fmt::format("{} is not in list", repr(*b.get(0))));
    return Value(count);
  }
  if (m.name == "copy") {
    ArgBinder b(args, what, {});
    return Value::list(items);
  }
  throw TemplateError(fmt::format("access to attribute '{}' of '{}' object is unsafe.", m.name,
                                  python_type_name(m.self)));
}

}  // namespace

Value call_method(const Callable& method, const CallArgs& args, Budget& budget) {
  const Value& self = method.self;
  if (self.is_string()) return str_method(method, args, budget);
  if (self.is_dict()) return dict_method(method, args);
  if (self.is_list()) return list_method(method, args);
  if (self.kind() == Value::Kind::kLoop && method.name == "cycle") {
    if (args.positional.empty()) throw TemplateError("no items for cycling given");
    const int64_t i = self.as_loop().index0 % static_cast<int64_t>(args.positional.size());
    return args.positional[static_cast<size_t>(i)];
  }
  throw TemplateError(
      fmt::format("the method {}.{} is not supported by ctxpar's chat template renderer",
                  python_type_name(self), method.name));
}

}  // namespace ctxpar::chat_template
