#include "ctxpar/server/python_json.h"

#include <cmath>

#include "ctxpar/tokenizer/chat_template/python_text.h"

namespace ctxpar::server {

std::string python_json_text(const nlohmann::ordered_json& v, bool ensure_ascii) {
  using ordered_json = nlohmann::ordered_json;
  if (v.is_object()) {
    std::string out = "{";
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (it != v.begin()) out += ", ";
      out += ordered_json(it.key()).dump(-1, ' ', ensure_ascii,
                                         ordered_json::error_handler_t::replace) +
             ": " + python_json_text(it.value(), ensure_ascii);
    }
    return out + "}";
  }
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i)
      out += (i > 0 ? ", " : "") + python_json_text(v[i], ensure_ascii);
    return out + "]";
  }
  if (v.is_number_float()) {
    // nlohmann writes 1e+15 where Python writes 1000000000000000.0, and null for NaN.
    const double d = v.get<double>();
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
    return chat_template::python_float_repr(d);
  }
  // Strings: the escapes json.dumps writes (\" \\ \n \r \t \b \f, \u00XX for the other control
  // characters), the rest as UTF-8, or with ensure_ascii as \uXXXX (surrogate pairs past the BMP).
  return v.dump(-1, ' ', ensure_ascii, ordered_json::error_handler_t::replace);
}

}  // namespace ctxpar::server
