// Values in and out of JSON: the render context arrives as nlohmann JSON, and the `tojson`
// filter must print exactly what Python's json.dumps prints (HF overrides jinja2's tojson with
// json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...)).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "ctxpar/tokenizer/chat_template/value.h"

namespace ctxpar::chat_template {

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;          // nullopt: one line; else the text of one level
  std::optional<std::string> item_separator;  // default ", " (one line) or "," (indented)
  std::optional<std::string> key_separator;   // default ": "
  bool sort_keys = false;
  size_t max_bytes = size_t{64} << 20;  // longer output throws TemplateError
};

// json.dumps(value, ...). Throws TemplateError for what JSON cannot hold (Undefined, a
// namespace, a macro), as Python's TypeError "Object of type ... is not JSON serializable".
std::string python_json_dumps(const Value& value, const JsonDumpOptions& options);

// The Value of a JSON document. Objects keep the iteration order of the JSON type:
// nlohmann::ordered_json keeps the document's key order (what Python would see),
// nlohmann::json sorts keys. Throws ctxpar::InputError for nesting deeper than 256 or an unsigned
// integer past int64.
Value value_from_json(const nlohmann::ordered_json& json);
Value value_from_json(const nlohmann::json& json);

}  // namespace ctxpar::chat_template
