// A JSON value together with the file and the JSON path it came from, so that every error
// about a tokenizer file names both (e.g. "dir/tokenizer.json: model.merges[3] must be ...").
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ctxpar/core/error.h"

namespace ctxpar::tokenizer {

class JsonNode {
 public:
  // `file` names the source in messages; `path` is this value's JSON path ("" = the root).
  JsonNode(const nlohmann::json& value, std::string file, std::string path = "");

  const nlohmann::json& json() const { return *value_; }
  const std::string& file() const { return *file_; }
  const std::string& path() const { return path_; }

  bool is_null() const { return value_->is_null(); }
  // Present and not null.
  bool has(std::string_view key) const;
  // A required member (throws naming the key when it is missing or null).
  JsonNode at(std::string_view key) const;
  // A member, or nullopt when it is missing or null.
  std::optional<JsonNode> find(std::string_view key) const;
  // The elements of an array (throws unless this is an array).
  std::vector<JsonNode> elements() const;

  // Typed reads; each throws naming the file, the path and the type found.
  std::string string() const;
  bool boolean() const;
  int64_t integer() const;
  double number() const;

  // Optional members with defaults (missing or null: the default).
  std::string string_or(std::string_view key, std::string fallback) const;
  bool bool_or(std::string_view key, bool fallback) const;

  // `type` must be a string member naming one of `supported`; returns it.
  std::string type_among(std::string_view what, std::initializer_list<std::string_view> supported,
                         std::string_view key = "type") const;

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> message, Args&&... args) const {
    CTXPAR_INPUT_FAIL("{}: {}: {}", *file_, path_.empty() ? "(top level)" : path_,
                      fmt::format(message, std::forward<Args>(args)...));
  }

 private:
  JsonNode child(const nlohmann::json& value, std::string_view key) const;
  std::string describe() const;  // "a number (3)", "an array", ...

  const nlohmann::json* value_;
  std::shared_ptr<const std::string> file_;
  std::string path_;
};

// Parses a JSON file; a missing, unreadable or malformed file throws ctxpar::InputError naming it
// (and the byte offset of a syntax error).
nlohmann::json read_json_file(const std::string& path);

}  // namespace ctxpar::tokenizer
