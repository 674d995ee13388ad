#include "ctxpar/server/tool_schema.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "ctxpar/server/python_json_decode.h"
#include "ctxpar/server/python_space.h"

namespace ctxpar::server {
namespace {

using ordered_json = nlohmann::ordered_json;

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// The digits of Python's int() / float() text: [0-9] with single underscores between digits,
// without the underscores. Empty when the text breaks the rule.
std::string digits_of(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c >= '0' && c <= '9') {
      out += c;
    } else if (c == '_' && i > 0 && i + 1 < text.size() &&
               std::isdigit(static_cast<unsigned char>(text[i - 1])) &&
               std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
      continue;
    } else {
      return {};
    }
  }
  return out;
}

// Python's int(text) in base 10 (whitespace around, a sign, digits with underscores).
std::optional<ordered_json> python_int(std::string_view text) {
  text = python_strip_space(text);
  bool negative = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  const std::string digits = digits_of(text);
  if (digits.empty()) return std::nullopt;
  uint64_t v = 0;
  const auto res = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (res.ec == std::errc::result_out_of_range) {  // past 64 bits: a float (see the header)
    const double d = std::strtod(digits.c_str(), nullptr);
    return ordered_json(negative ? -d : d);
  }
  if (!negative) {
    return v <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
               ? ordered_json(static_cast<int64_t>(v))
               : ordered_json(v);
  }
  if (v <= uint64_t{1} << 63) return ordered_json(static_cast<int64_t>(0 - v));
  return ordered_json(-static_cast<double>(v));
}

// Python's float(text): whitespace around, a sign, inf / infinity / nan in any case, or a
// decimal number with underscores between digits and an optional exponent.
std::optional<double> python_float(std::string_view text) {
  text = python_strip_space(text);
  bool negative = false;
  if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  const std::string lower = ascii_lower(text);
  if (lower == "inf" || lower == "infinity") {
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  if (lower == "nan") return std::numeric_limits<double>::quiet_NaN();
  // mantissa [. fraction] [e [sign] exponent], each digit run with Python's underscores.
  const size_t e = lower.find('e');
  const std::string_view mantissa = std::string_view(lower).substr(0, e);
  const size_t dot = mantissa.find('.');
  const std::string_view whole_text = mantissa.substr(0, dot);
  const std::string_view fraction_text =
      dot == std::string_view::npos ? std::string_view() : mantissa.substr(dot + 1);
  const std::string whole = digits_of(whole_text), fraction = digits_of(fraction_text);
  if ((!whole_text.empty() && whole.empty()) || (!fraction_text.empty() && fraction.empty()) ||
      (whole.empty() && fraction.empty())) {
    return std::nullopt;
  }
  std::string clean = whole + (dot == std::string_view::npos ? "" : "." + fraction);
  if (e != std::string::npos) {
    std::string_view exponent = std::string_view(lower).substr(e + 1);
    std::string sign;
    if (!exponent.empty() && (exponent[0] == '+' || exponent[0] == '-')) {
      sign = exponent.substr(0, 1);
      exponent.remove_prefix(1);
    }
    const std::string digits = digits_of(exponent);
    if (digits.empty()) return std::nullopt;
    clean += "e" + sign + digits;
  }
  double value = 0;
  const auto res = std::from_chars(clean.data(), clean.data() + clean.size(), value);
  if (res.ec == std::errc::result_out_of_range) {
    value = clean.find("e-") != std::string::npos ? 0.0 : std::numeric_limits<double>::infinity();
  } else if (res.ec != std::errc() || res.ptr != clean.data() + clean.size()) {
    return std::nullopt;
  }
  return negative ? -value : value;
}

// Whether json.dumps(value, allow_nan=False) writes it: no inf or nan anywhere.
bool all_finite(const ordered_json& v) {
  if (v.is_number_float()) return std::isfinite(v.get<double>());
  if (v.is_structured()) {
    for (const ordered_json& item : v) {
      if (!all_finite(item)) return false;
    }
  }
  return true;
}

// json.loads(text) when the result is finite JSON.
std::optional<ordered_json> finite_json(std::string_view text) {
  ordered_json v = ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (v.is_discarded() || !all_finite(v)) return std::nullopt;
  return v;
}

}  // namespace

const nlohmann::json* tool_parameters(const nlohmann::json& tools, std::string_view name) {
  if (!tools.is_array()) return nullptr;
  for (const nlohmann::json& tool : tools) {
    if (!tool.is_object() || !tool.contains("function") || !tool["function"].is_object()) continue;
    const nlohmann::json& function = tool["function"];
    const auto it = function.find("name");
    if (it == function.end() || !it->is_string() || it->get_ref<const std::string&>() != name) {
      continue;
    }
    const auto params = function.find("parameters");
    return params == function.end() || params->is_null() ? nullptr : &*params;
  }
  return nullptr;
}

bool is_string_parameter(const nlohmann::json& tools, std::string_view name, std::string_view arg) {
  const nlohmann::json* params = tool_parameters(tools, name);
  if (params == nullptr || !params->is_object()) return false;
  const auto props = params->find("properties");
  if (props == params->end() || !props->is_object()) return false;
  const auto prop = props->find(std::string(arg));
  if (prop == props->end() || !prop->is_object()) return false;
  const auto type = prop->find("type");
  return type != prop->end() && *type == "string";
}

}  // namespace ctxpar::server

namespace ctxpar::server {

const nlohmann::json& tool_properties(const nlohmann::json& tools, std::string_view name) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json* params = tool_parameters(tools, name);
  if (params == nullptr || !params->is_object()) return kEmpty;
  const auto props = params->find("properties");
  return props != params->end() && props->is_object() ? *props : kEmpty;
}

std::vector<std::string> schema_types(const nlohmann::json& schema) {
  if (!schema.is_object()) return {"string"};
  std::set<std::string> types;
  if (const auto type = schema.find("type"); type != schema.end()) {
    if (type->is_string()) types.insert(type->get<std::string>());
    if (type->is_array()) {
      for (const nlohmann::json& t : *type) {
        if (t.is_string()) types.insert(t.get<std::string>());
      }
    }
  }
  if (const auto values = schema.find("enum"); values != schema.end() && values->is_array()) {
    for (const nlohmann::json& v : *values) {
      types.insert(v.is_null()             ? "null"
                   : v.is_boolean()        ? "boolean"
                   : v.is_number_integer() ? "integer"
                   : v.is_number_float()   ? "number"
                   : v.is_string()         ? "string"
                   : v.is_array()          ? "array"
                                           : "object");
    }
  }
  for (const char* choice : {"anyOf", "oneOf", "allOf"}) {
    const auto list = schema.find(choice);
    if (list == schema.end() || !list->is_array()) continue;
    for (const nlohmann::json& c : *list) {
      for (std::string& t : schema_types(c)) types.insert(std::move(t));
    }
  }
  if (types.empty()) return {"string"};
  return {types.begin(), types.end()};
}

namespace {

// coerce_to_schema_type's two versions (see the header); nullopt where vLLM raises.
std::optional<ordered_json> coerce(std::string_view value, const std::vector<std::string>& types,
                                   bool legacy) {
  static const std::pair<std::string_view, std::string_view> kAliases[] = {
      {"str", "string"},     {"text", "string"},      {"varchar", "string"}, {"char", "string"},
      {"enum", "string"},    {"int", "integer"},      {"int32", "integer"},  {"int64", "integer"},
      {"uint", "integer"},   {"uint32", "integer"},   {"uint64", "integer"}, {"long", "integer"},
      {"short", "integer"},  {"unsigned", "integer"}, {"float", "number"},   {"float32", "number"},
      {"float64", "number"}, {"double", "number"},    {"bool", "boolean"},   {"dict", "object"},
      {"arr", "array"},      {"list", "array"},       {"sequence", "array"}};
  std::set<std::string> normalized;
  for (const std::string& t : types) {
    std::string key = ascii_lower(python_strip_space(t));
    for (const auto& [alias, type] : kAliases) {
      if (key == alias) key = type;
    }
    normalized.insert(std::move(key));
  }
  const auto json_of = [legacy](std::string_view text) {
    return legacy ? python_json_loads(text) : finite_json(text);
  };
  const auto allows = [&](const char* type) { return normalized.count(type) > 0; };
  if (allows("null") && ascii_lower(value) == "null") return nullptr;
  if (allows("integer")) {
    if (std::optional<ordered_json> v = python_int(value)) return *v;
  }
  if (allows("number")) {
    const std::optional<double> d = python_float(value);
    // The legacy version's int(float(value)) raises OverflowError on inf, past its except.
    if (legacy && d && std::isinf(*d)) return std::nullopt;
    if (d && std::isfinite(*d)) {
      // A whole number is an int, as Python's int(val).
      if (*d != std::trunc(*d)) return *d;
      if (std::fabs(*d) < 9.2e18) return static_cast<int64_t>(*d);
      if (*d > 0 && *d < 1.8e19) return static_cast<uint64_t>(*d);
      return *d;
    }
  }
  if (allows("boolean")) {
    const std::string b = ascii_lower(python_strip_space(value));
    if (b == "true" || b == "1") return true;
    if (b == "false" || b == "0") return false;
  }
  if (allows("object") || allows("array")) {
    if (std::optional<ordered_json> v = json_of(value)) return *v;
  }
  if (allows("string")) return std::string(value);
  if (std::optional<ordered_json> v = json_of(value)) return *v;
  return std::string(value);
}

}  // namespace

ordered_json coerce_to_schema_type(std::string_view value, const std::vector<std::string>& types) {
  return *coerce(value, types, /*legacy=*/false);
}

std::optional<ordered_json> legacy_coerce_to_schema_type(std::string_view value,
                                                         const std::vector<std::string>& types) {
  return coerce(value, types, /*legacy=*/true);
}

}  // namespace ctxpar::server
