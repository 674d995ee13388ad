#include "ctxpar/tokenizer/chat_template/filters.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "ctxpar/tokenizer/chat_template/access.h"
#include "ctxpar/tokenizer/chat_template/json_io.h"
#include "ctxpar/tokenizer/chat_template/methods.h"
#include "ctxpar/tokenizer/chat_template/predicates.h"
#include "ctxpar/tokenizer/chat_template/python_text.h"
#include "ctxpar/tokenizer/chat_template/template_error.h"

namespace ctxpar::chat_template {
namespace {

constexpr std::string_view kSupported[] = {
    "abs",    "attr",   "capitalize", "count",      "d",           "default", "dictsort",
    "e",      "escape", "first",      "float",      "forceescape", "indent",  "int",
    "items",  "join",   "last",       "length",     "list",        "lower",   "map",
    "max",    "min",    "reject",     "rejectattr", "replace",     "reverse", "round",
    "safe",   "select", "selectattr", "sort",       "string",      "sum",     "title",
    "tojson", "trim",   "unique",     "upper",      "wordcount"};
constexpr std::string_view kJinjaOnly[] = {
    "batch", "center",    "filesizeformat", "format",    "groupby", "pprint",   "random",
    "slice", "striptags", "truncate",       "urlencode", "urlize",  "wordwrap", "xmlattr"};

const Value& require_defined(const Value& v) {
  if (v.is_undefined()) throw TemplateError(v.undefined_hint());
  return v;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

// jinja2's make_attrgetter: "a.b.0" looks up each part with item-first access, digits as ints;
// a given default replaces an Undefined after every part.
Value get_path(const Value& item, const std::string& path, const Value* fallback = nullptr) {
  Value v = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
    errno = 0;
    const long long index = std::strtoll(part.c_str(), nullptr, 10);
    if (!part.empty() && part.find_first_not_of("0123456789") == std::string::npos && errno == 0) {
      v = get_item(v, Value(static_cast<int64_t>(index)));
    } else {
      v = get_item(v, Value(part));
    }
    if (fallback && v.is_undefined()) v = *fallback;
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

// The sort key of jinja2's ignore_case: strings compare lowercased.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(ascii_lower(v.as_string()));
  return v;
}

void stable_sort_values(std::vector<Value>& items, const std::vector<Value>& keys, bool reverse) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    // Python's sorted(reverse=True) keeps equal items in their original order.
    return reverse ? compare(keys[b], keys[a], "<") < 0 : compare(keys[a], keys[b], "<") < 0;
  });
  std::vector<Value> sorted;
  sorted.reserve(items.size());
  for (size_t i : order) sorted.push_back(items[i]);
  items = std::move(sorted);
}

// int(value) / float(value) of a string, Python's grammar (whitespace, underscores, sign).
std::optional<int64_t> parse_python_int(const std::string& s, int base) {
  std::string t = python_strip(s, nullptr, StripSide::kBoth);
  std::string digits;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '_' && i > 0 && i + 1 < t.size() && t[i - 1] != '_') continue;
    digits.push_back(t[i]);
  }
  if (digits.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(digits.c_str(), &end, base);
  if (errno != 0 || *end != '\0' || end == digits.c_str()) return std::nullopt;
  return v;
}

std::optional<double> parse_python_float(const std::string& s) {
  std::string t = python_strip(s, nullptr, StripSide::kBoth);
  t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
  if (t.empty()) return std::nullopt;
  const std::string lower = ascii_lower(t);
  if (lower.find("0x") != std::string::npos) return std::nullopt;  // strtod would take hex
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (*end != '\0') return std::nullopt;
  return v;
}

Value do_int(const Value& v, const ArgBinder& b) {
  const Value fallback = b.get_or(0, Value(0));
  const int base = static_cast<int>(b.int_or(1, 10));
  if (v.is_int() || v.is_bool()) return Value(v.as_int());
  if (v.is_float()) {
    if (!std::isfinite(v.as_double())) return fallback;
    return Value(static_cast<int64_t>(std::trunc(v.as_double())));
  }
  if (v.is_string()) {
    if (auto i = parse_python_int(v.as_string(), base)) return Value(*i);
    // jinja2 then tries int(float(value)), so "42.23" | int is 42.
    if (auto f = parse_python_float(v.as_string()); f && std::isfinite(*f)) {
      return Value(static_cast<int64_t>(std::trunc(*f)));
    }
  }
  return fallback;
}

Value do_float(const Value& v, const ArgBinder& b) {
  const Value fallback = b.get_or(0, Value(0.0));
  if (v.is_number()) return Value(v.as_double());
  if (v.is_string()) {
    if (auto f = parse_python_float(v.as_string())) return Value(*f);
  }
  return fallback;
}

Value do_tojson(const Value& v, const ArgBinder& b, const Budget& budget) {
  JsonDumpOptions opt;
  opt.ensure_ascii = b.bool_or(0, false);
  if (const Value* indent = b.get(1); indent && !indent->is_none()) {
    if (indent->is_string()) {
      opt.indent = indent->as_string();
    } else if (indent->is_int() || indent->is_bool()) {
      const int64_t n = std::max<int64_t>(indent->as_int(), 0);
      budget.check_size(static_cast<size_t>(n));
      opt.indent = std::string(static_cast<size_t>(n), ' ');
    } else {
      throw TemplateError("tojson: indent must be an int or a str");
    }
  }
  if (const Value* sep = b.get(2); sep && !sep->is_none()) {
    if (!sep->is_list() || sep->items().size() != 2 || !sep->items()[0].is_string() ||
        !sep->items()[1].is_string()) {
      throw TemplateError("tojson: separators must be an (item_separator, key_separator) pair");
    }
    opt.item_separator = sep->items()[0].as_string();
    opt.key_separator = sep->items()[1].as_string();
  }
  opt.sort_keys = b.bool_or(3, false);
  opt.max_bytes = budget.limits().max_output_bytes;
  return Value(python_json_dumps(v, opt));
}

Value do_indent(const Value& v, const ArgBinder& b, Budget& budget) {
  std::string indention;
  const Value width = b.get_or(0, Value(4));
  if (width.is_string()) {
    indention = width.as_string();
  } else {
    if (!width.is_int() && !width.is_bool())
      throw TemplateError("indent: width must be an int or a str");
    const int64_t n = std::max<int64_t>(width.as_int(), 0);
    budget.check_size(static_cast<size_t>(n));
    indention = std::string(static_cast<size_t>(n), ' ');
  }
  const bool first = b.bool_or(1, false);
  const bool blank = b.bool_or(2, false);
  // jinja2 appends "\n" before splitlines(), so a trailing newline is kept.
  CallArgs no_args;
  Callable split;
  split.kind = Callable::Kind::kMethod;
  split.name = "splitlines";
  split.self = Value(to_str(v) + "\n");
  const Value lines_value = call_method(split, no_args, budget);
  const auto& lines = lines_value.items();
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i].as_string();
    if (i > 0) out += "\n";
    if (i > 0 && (blank || !line.empty())) out += indention;
    out += line;
    budget.check_size(out.size());
  }
  if (first) out = indention + out;
  return Value(std::move(out));
}

std::string do_title(const std::string& s) {
  // jinja2: words start after runs of "-", whitespace, "(", "{", "[", "<".
  std::string out;
  bool word_start = true;
  for (char32_t c : decode_utf8(s)) {
    const bool sep = c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || is_python_space(c);
    if (sep) {
      append_utf8(out, c);
      word_start = true;
      continue;
    }
    if (c < 0x80) {
      char ch = static_cast<char>(c);
      if (word_start && ch >= 'a' && ch <= 'z') ch = static_cast<char>(ch - 32);
      if (!word_start && ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch + 32);
      out.push_back(ch);
    } else {
      append_utf8(out, c);
    }
    word_start = false;
  }
  return out;
}

int64_t do_wordcount(const std::string& s) {
  // \w+ runs; non-ASCII code points count as word characters.
  int64_t count = 0;
  bool in_word = false;
  for (char32_t c : decode_utf8(s)) {
    const bool w =
        c >= 0x80 ? !is_python_space(c)
                  : ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (w && !in_word) ++count;
    in_word = w;
  }
  return count;
}

// select / reject / selectattr / rejectattr.
Value do_select(std::string_view name, const Value& subject, const CallArgs& args) {
  const bool by_attr = name == "selectattr" || name == "rejectattr";
  const bool keep_if = name == "select" || name == "selectattr";
  size_t i = 0;
  std::string attribute;
  if (by_attr) {
    if (args.positional.empty() || !args.positional[0].is_string()) {
      throw TemplateError(fmt::format("{} needs an attribute name", name));
    }
    attribute = args.positional[0].as_string();
    i = 1;
  }
  std::string test;
  CallArgs test_args;
  if (i < args.positional.size()) {
    if (!args.positional[i].is_string())
      throw TemplateError(fmt::format("{}: test name must be a str", name));
    test = args.positional[i].as_string();
    if (test_support(test) != BuiltinSupport::kSupported) {
      throw TemplateError(
          fmt::format("no test named '{}' (supported: {})", test, supported_test_names()));
    }
    test_args.positional.assign(args.positional.begin() + static_cast<long>(i) + 1,
                                args.positional.end());
    test_args.keywords = args.keywords;
  } else if (!args.keywords.empty()) {
    throw TemplateError(fmt::format("{} got unexpected keyword arguments", name));
  }
  std::vector<Value> out;
  for (const Value& item : iterate(subject)) {
    const Value probe = by_attr ? get_path(item, attribute) : item;
    const bool ok = test.empty() ? truthy(probe) : apply_test(test, probe, test_args);
    if (ok == keep_if) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value do_map(const Value& subject, const CallArgs& args, Budget& budget) {
  std::vector<Value> out;
  const Value* attribute = nullptr;
  const Value* fallback = nullptr;
  for (const auto& [k, v] : args.keywords) {
    if (k == "attribute") attribute = &v;
    if (k == "default") fallback = &v;
  }
  if (attribute) {
    if (!attribute->is_string()) throw TemplateError("map: attribute must be a str");
    for (const Value& item : iterate(subject)) {
      out.push_back(get_path(item, attribute->as_string(), fallback));
    }
    return Value::list(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string()) {
    throw TemplateError("map needs a filter name or attribute=");
  }
  const std::string filter = args.positional[0].as_string();
  if (filter_support(filter) != BuiltinSupport::kSupported) {
    throw TemplateError(
        fmt::format("no filter named '{}' (supported: {})", filter, supported_filter_names()));
  }
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keywords = args.keywords;
  for (const Value& item : iterate(subject)) {
    out.push_back(apply_filter(filter, item, rest, budget));
  }
  return Value::list(std::move(out));
}

Value do_min_max(bool is_max, const Value& subject, const ArgBinder& b) {
  const bool case_sensitive = b.bool_or(0, false);
  const std::string* attribute = b.string_or_null(1);
  std::vector<Value> items = iterate(subject);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key;
  for (size_t i = 0; i < items.size(); ++i) {
    Value key = sort_key(attribute ? get_path(items[i], *attribute) : items[i], case_sensitive);
    if (i == 0 || (is_max ? compare(key, best_key, ">") > 0 : compare(key, best_key, "<") < 0)) {
      best = i;
      best_key = std::move(key);
    }
  }
  return items[best];
}

Value add_values(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return Value(a.as_double() + b.as_double());
    int64_t r = 0;
    if (__builtin_add_overflow(a.as_int(), b.as_int(), &r)) {
      throw TemplateError("integer overflow in sum");
    }
    return Value(r);
  }
  throw TemplateError(fmt::format("unsupported operand type(s) for +: '{}' and '{}'",
                                  python_type_name(a), python_type_name(b)));
}

Value do_round(const Value& v, const ArgBinder& b) {
  const int64_t precision = b.int_or(0, 0);
  const std::string* method = b.string_or_null(1);
  const std::string m = method ? *method : "common";
  if (m != "common" && m != "ceil" && m != "floor") {
    throw TemplateError("round: method must be common, ceil or floor");
  }
  require_defined(v);
  if (!v.is_number()) throw TemplateError("round: value must be a number");
  if (m == "common" && (v.is_int() || v.is_bool()) && precision >= 0) return Value(v.as_int());
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_double() * scale;
  // Python's round() rounds half to even, which is nearbyint's default mode.
  const double r = m == "ceil" ? std::ceil(x) : m == "floor" ? std::floor(x) : std::nearbyint(x);
  return Value(r / scale);
}

}  // namespace

BuiltinSupport filter_support(std::string_view name) {
  if (std::find(std::begin(kSupported), std::end(kSupported), name) != std::end(kSupported)) {
    return BuiltinSupport::kSupported;
  }
  if (std::find(std::begin(kJinjaOnly), std::end(kJinjaOnly), name) != std::end(kJinjaOnly)) {
    return BuiltinSupport::kNotSupported;
  }
  return BuiltinSupport::kUnknown;
}

std::string supported_filter_names() {
  std::string out;
  for (auto n : kSupported) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

Value apply_filter(std::string_view name, const Value& v, const CallArgs& args, Budget& budget) {
  const std::string what = fmt::format("filter '{}'", name);
  if (name == "tojson") {
    return do_tojson(
        v, ArgBinder(args, what, {"ensure_ascii", "indent", "separators", "sort_keys"}), budget);
  }
  if (name == "trim") {
    ArgBinder b(args, what, {"chars"});
    return Value(python_strip(to_str(v), b.string_or_null(0), StripSide::kBoth));
  }
  if (name == "length" || name == "count") {
    ArgBinder b(args, what, {});
    return Value(length_of(v));
  }
  if (name == "default" || name == "d") {
    ArgBinder b(args, what, {"default_value", "boolean"});
    const bool use_default = v.is_undefined() || (b.bool_or(1, false) && !truthy(v));
    return use_default ? b.get_or(0, Value("")) : v;
  }
  if (name == "first" || name == "last") {
    ArgBinder b(args, what, {});
    const std::vector<Value> items = iterate(v);
    if (items.empty()) {
      return Value::undefined(fmt::format("No {} item, sequence was empty.", name));
    }
    return name == "first" ? items.front() : items.back();
  }
  if (name == "join") {
    ArgBinder b(args, what, {"d", "attribute"});
    const std::string sep = b.get(0) ? to_str(*b.get(0)) : "";
    const Value* attribute = b.get(1);
    std::string out;
    bool first = true;
    for (const Value& item : iterate(v)) {
      if (!first) out += sep;
      first = false;
      out += to_str(attribute && !attribute->is_none() ? get_path(item, to_str(*attribute)) : item);
      budget.check_size(out.size());
    }
    return Value(std::move(out));
  }
  if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
    ArgBinder b(args, what, {});
    const std::string s = to_str(v);
    if (name == "upper") return Value(ascii_upper(s));
    if (name == "lower") return Value(ascii_lower(s));
    if (name == "capitalize") return Value(python_str_capitalize(s));
    return Value(do_title(s));
  }
  if (name == "replace") {
    ArgBinder b(args, what, {"old", "new", "count"});
    if (!b.get(0) || !b.get(1)) throw TemplateError("filter 'replace' needs old and new");
    Callable m;
    m.kind = Callable::Kind::kMethod;
    m.name = "replace";
    m.self = Value(to_str(v));
    CallArgs margs{{Value(to_str(*b.get(0))), Value(to_str(*b.get(1)))}, {}};
    if (b.get(2) && !b.get(2)->is_none()) margs.positional.push_back(*b.get(2));
    return call_method(m, margs, budget);
  }
  if (name == "list") {
    ArgBinder b(args, what, {});
    return Value::list(iterate(v));
  }
  if (name == "string" || name == "safe") {
    ArgBinder b(args, what, {});
    return Value(to_str(v));
  }
  if (name == "e" || name == "escape" || name == "forceescape") {
    ArgBinder b(args, what, {});
    return Value(html_escape(to_str(v)));
  }
  if (name == "int") return do_int(v, ArgBinder(args, what, {"default", "base"}));
  if (name == "float") return do_float(v, ArgBinder(args, what, {"default"}));
  if (name == "items") {
    ArgBinder b(args, what, {});
    if (v.is_undefined()) return Value::list({});
    if (!v.is_dict()) throw TemplateError("Can only get item pairs from a mapping.");
    std::vector<Value> out;
    for (const auto& [k, val] : v.as_dict().entries()) out.push_back(Value::tuple({Value(k), val}));
    return Value::list(std::move(out));
  }
  if (name == "dictsort") {
    ArgBinder b(args, what, {"case_sensitive", "by", "reverse"});
    require_defined(v);
    if (!v.is_dict()) throw TemplateError("dictsort: value must be a dict");
    const std::string* by = b.string_or_null(1);
    const bool by_value = by && *by == "value";
    if (by && *by != "key" && *by != "value") {
      throw TemplateError("You can only sort by either \"key\" or \"value\"");
    }
    std::vector<Value> items, keys;
    for (const auto& [k, val] : v.as_dict().entries()) {
      items.push_back(Value::tuple({Value(k), val}));
      keys.push_back(sort_key(by_value ? val : Value(k), b.bool_or(0, false)));
    }
    stable_sort_values(items, keys, b.bool_or(2, false));
    return Value::list(std::move(items));
  }
  if (name == "sort") {
    ArgBinder b(args, what, {"reverse", "case_sensitive", "attribute"});
    std::vector<Value> items = iterate(v);
    const std::string* attribute = b.string_or_null(2);
    std::vector<Value> keys;
    for (const Value& item : items) {
      keys.push_back(sort_key(attribute ? get_path(item, *attribute) : item, b.bool_or(1, false)));
    }
    stable_sort_values(items, keys, b.bool_or(0, false));
    return Value::list(std::move(items));
  }
  if (name == "unique") {
    ArgBinder b(args, what, {"case_sensitive", "attribute"});
    const std::string* attribute = b.string_or_null(1);
    std::vector<Value> out, seen;
    for (const Value& item : iterate(v)) {
      Value key = sort_key(attribute ? get_path(item, *attribute) : item, b.bool_or(0, false));
      if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) {
        seen.push_back(std::move(key));
        out.push_back(item);
      }
    }
    return Value::list(std::move(out));
  }
  if (name == "reverse") {
    ArgBinder b(args, what, {});
    if (v.is_string()) {
      std::u32string cps = decode_utf8(v.as_string());
      std::reverse(cps.begin(), cps.end());
      return Value(encode_utf8(cps));
    }
    std::vector<Value> items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr") {
    return do_select(name, v, args);
  }
  if (name == "map") return do_map(v, args, budget);
  if (name == "attr") {
    ArgBinder b(args, what, {"name"});
    if (!b.get(0)) throw TemplateError("filter 'attr' needs a name");
    const std::string attr_name = to_str(*b.get(0));
    // Attributes only: a dict's keys are not attributes, its methods are.
    if (v.is_dict()) {
      const Value method = get_attribute(Value::dict(Dict()), attr_name);
      if (method.is_undefined()) return method;
      return get_attribute(v, attr_name);
    }
    return get_attribute(v, attr_name);
  }
  if (name == "abs") {
    ArgBinder b(args, what, {});
    require_defined(v);
    if (v.is_float()) return Value(std::fabs(v.as_double()));
    if (v.is_int() || v.is_bool()) {
      if (v.as_int() == INT64_MIN) throw TemplateError("integer overflow in abs");
      return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    throw TemplateError(fmt::format("bad operand type for abs(): '{}'", python_type_name(v)));
  }
  if (name == "round") return do_round(v, ArgBinder(args, what, {"precision", "method"}));
  if (name == "max" || name == "min") {
    return do_min_max(name == "max", v, ArgBinder(args, what, {"case_sensitive", "attribute"}));
  }
  if (name == "sum") {
    ArgBinder b(args, what, {"attribute", "start"});
    const std::string* attribute = b.string_or_null(0);
    Value total = b.get_or(1, Value(0));
    for (const Value& item : iterate(v)) {
      total = add_values(total, attribute ? get_path(item, *attribute) : item);
    }
    return total;
  }
  if (name == "wordcount") {
    ArgBinder b(args, what, {});
    return Value(do_wordcount(to_str(v)));
  }
  if (name == "indent")
    return do_indent(v, ArgBinder(args, what, {"width", "first", "blank"}), budget);
  throw TemplateError(fmt::format("no filter named '{}'", name));
}

}  // namespace ctxpar::chat_template
