// Readers of a request body's fields for the routes that translate a request into a chat
// request (/v1/responses, /v1/messages): absent and null read alike, and a value of the wrong
// type is a 400 naming the field and what it should be.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>

#include "ctxpar/server/api_error.h"

namespace ctxpar::server {

// obj[key], or null when `obj` lacks it (or is not an object).
inline const nlohmann::ordered_json& field(const nlohmann::ordered_json& obj, const char* key) {
  static const nlohmann::ordered_json null;
  if (!obj.is_object()) return null;
  const auto it = obj.find(key);
  return it == obj.end() ? null : *it;
}

[[noreturn]] inline void wrong_type(const std::string& param, const char* expected) {
  throw bad_request(fmt::format("{}: Input should be {}", param, expected), param);
}

// `obj[key]` when it is a string, else `fallback`: a value of another type then reads as an
// unknown one, which the caller refuses with a 400.
inline std::string string_or(const nlohmann::ordered_json& obj, const char* key,
                             const char* fallback) {
  const nlohmann::ordered_json& v = field(obj, key);
  return v.is_string() ? v.get<std::string>() : fallback;
}

// obj[key], which must be a string; `where` names obj in the error.
inline std::string string_field(const nlohmann::ordered_json& obj, const char* key,
                                const std::string& where) {
  const nlohmann::ordered_json& v = field(obj, key);
  if (!v.is_string()) wrong_type(fmt::format("{}.{}", where, key), "a valid string");
  return v.get<std::string>();
}

}  // namespace ctxpar::server
