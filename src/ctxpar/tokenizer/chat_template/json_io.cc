#include "ctxpar/tokenizer/chat_template/json_io.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ctxpar/core/error.h"
#include "ctxpar/tokenizer/chat_template/python_text.h"
#include "ctxpar/tokenizer/chat_template/template_error.h"

namespace ctxpar::chat_template {
namespace {

constexpr int kMaxJsonDepth = 256;

void dump_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out.push_back('"');
  for (char32_t c : decode_utf8(s)) {
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c < 0x20 || (ensure_ascii && c > 0x7E)) {
      if (c >= 0x10000) {  // a surrogate pair, as Python writes it
        const char32_t v = c - 0x10000;
        out += fmt::format("\\u{:04x}\\u{:04x}", static_cast<unsigned>(0xD800 + (v >> 10)),
                           static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      } else {
        out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
      }
    } else {
      append_utf8(out, c);
    }
  }
  out.push_back('"');
}

struct Dumper {
  const JsonDumpOptions& opt;
  std::string item_sep;
  std::string key_sep;
  std::string out;

  void newline(int level) {
    out.push_back('\n');
    for (int i = 0; i < level; ++i) out += *opt.indent;
    if (out.size() > opt.max_bytes) {
      throw TemplateError(fmt::format("tojson output passed the limit of {} bytes", opt.max_bytes));
    }
  }

  void dump(const Value& v, int level) {
    if (level > kMaxValueDepth + 1)
      throw TemplateError("maximum recursion depth exceeded in tojson");
    switch (v.kind()) {
      case Value::Kind::kNone:
        out += "null";
        return;
      case Value::Kind::kBool:
        out += v.as_bool() ? "true" : "false";
        return;
      case Value::Kind::kInt:
        out += std::to_string(v.as_int());
        return;
      case Value::Kind::kFloat: {
        const double d = v.as_double();
        if (std::isnan(d)) {
          out += "NaN";
        } else if (std::isinf(d)) {
          out += d > 0 ? "Infinity" : "-Infinity";
        } else {
          out += python_float_repr(d);
        }
        return;
      }
      case Value::Kind::kString:
        dump_string(out, v.as_string(), opt.ensure_ascii);
        if (out.size() > opt.max_bytes) {
          throw TemplateError(
              fmt::format("tojson output passed the limit of {} bytes", opt.max_bytes));
        }
        return;
      case Value::Kind::kList: {
        const auto& items = v.items();
        if (items.empty()) {
          out += "[]";
          return;
        }
        out.push_back('[');
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out += item_sep;
          if (opt.indent) newline(level + 1);
          dump(items[i], level + 1);
        }
        if (opt.indent) newline(level);
        out.push_back(']');
        return;
      }
      case Value::Kind::kDict: {
        std::vector<const Dict::Entry*> entries;
        for (const auto& e : v.as_dict().entries()) entries.push_back(&e);
        if (entries.empty()) {
          out += "{}";
          return;
        }
        if (opt.sort_keys) {
          std::stable_sort(entries.begin(), entries.end(),
                           [](const auto* a, const auto* b) { return a->first < b->first; });
        }
        out.push_back('{');
        for (size_t i = 0; i < entries.size(); ++i) {
          if (i) out += item_sep;
          if (opt.indent) newline(level + 1);
          dump_string(out, entries[i]->first, opt.ensure_ascii);
          out += key_sep;
          dump(entries[i]->second, level + 1);
        }
        if (opt.indent) newline(level);
        out.push_back('}');
        return;
      }
      default:
        throw TemplateError(
            fmt::format("Object of type {} is not JSON serializable", python_type_name(v)));
    }
  }
};

template <class Json>
Value from_json_impl(const Json& j, int depth) {
  CTXPAR_CHECK_INPUT(depth <= kMaxJsonDepth,
                     "chat template context nests deeper than {} levels; flatten the request",
                     kMaxJsonDepth);
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value(None{});
    case nlohmann::json::value_t::boolean:
      return Value(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = j.template get<uint64_t>();
      CTXPAR_CHECK_INPUT(u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()),
                         "chat template context holds the integer {}, past the int64 range", u);
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value(j.template get<double>());
    case nlohmann::json::value_t::string:
      return Value(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json_impl(e, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it) {
        d.set(it.key(), from_json_impl(it.value(), depth + 1));
      }
      return Value::dict(std::move(d));
    }
    default:
      CTXPAR_INPUT_FAIL(
          "chat template context holds a JSON {} value; only null, booleans, numbers, "
          "strings, arrays and objects are valid",
          j.type_name());
  }
}

}  // namespace

std::string python_json_dumps(const Value& value, const JsonDumpOptions& options) {
  Dumper d{options,
           options.item_separator.value_or(options.indent ? "," : ", "),
           options.key_separator.value_or(": "),
           {}};
  d.dump(value, 0);
  return std::move(d.out);
}

Value value_from_json(const nlohmann::ordered_json& json) {
  return from_json_impl(json, 0);
}
Value value_from_json(const nlohmann::json& json) {
  return from_json_impl(json, 0);
}

}  // namespace ctxpar::chat_template
