#include "ctxpar/tokenizer/json_node.h"

#include <fstream>
#include <sstream>

namespace ctxpar::tokenizer {

JsonNode::JsonNode(const nlohmann::json& value, std::string file, std::string path)
    : value_(&value),
      file_(std::make_shared<const std::string>(std::move(file))),
      path_(std::move(path)) {}

JsonNode JsonNode::child(const nlohmann::json& value, std::string_view key) const {
  JsonNode c = *this;
  c.value_ = &value;
  c.path_ = path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
  return c;
}

std::string JsonNode::describe() const {
  std::string shown = value_->dump();
  if (shown.size() > 40) shown = shown.substr(0, 37) + "...";
  switch (value_->type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return fmt::format("a string ({})", shown);
    case nlohmann::json::value_t::boolean:
      return fmt::format("a boolean ({})", shown);
    default:
      return fmt::format("a number ({})", shown);
  }
}

bool JsonNode::has(std::string_view key) const {
  if (!value_->is_object()) return false;
  const auto it = value_->find(key);
  return it != value_->end() && !it->is_null();
}

JsonNode JsonNode::at(std::string_view key) const {
  if (!value_->is_object()) fail("must be an object, not {}", describe());
  const auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) fail("the required field '{}' is missing", key);
  return child(*it, key);
}

std::optional<JsonNode> JsonNode::find(std::string_view key) const {
  if (!value_->is_object()) fail("must be an object, not {}", describe());
  const auto it = value_->find(key);
  if (it == value_->end() || it->is_null()) return std::nullopt;
  return child(*it, key);
}

std::vector<JsonNode> JsonNode::elements() const {
  if (!value_->is_array()) fail("must be an array, not {}", describe());
  std::vector<JsonNode> out;
  out.reserve(value_->size());
  for (size_t i = 0; i < value_->size(); ++i) {
    JsonNode c = *this;
    c.value_ = &(*value_)[i];
    c.path_ = fmt::format("{}[{}]", path_, i);
    out.push_back(std::move(c));
  }
  return out;
}

std::string JsonNode::string() const {
  if (!value_->is_string()) fail("must be a string, not {}", describe());
  return value_->get<std::string>();
}

bool JsonNode::boolean() const {
  if (!value_->is_boolean()) fail("must be true or false, not {}", describe());
  return value_->get<bool>();
}

int64_t JsonNode::integer() const {
  if (!value_->is_number_integer()) fail("must be an integer, not {}", describe());
  return value_->get<int64_t>();
}

double JsonNode::number() const {
  if (!value_->is_number()) fail("must be a number, not {}", describe());
  return value_->get<double>();
}

std::string JsonNode::string_or(std::string_view key, std::string fallback) const {
  const auto v = find(key);
  return v ? v->string() : std::move(fallback);
}

bool JsonNode::bool_or(std::string_view key, bool fallback) const {
  const auto v = find(key);
  return v ? v->boolean() : fallback;
}

std::string JsonNode::type_among(std::string_view what,
                                 std::initializer_list<std::string_view> supported,
                                 std::string_view key) const {
  const std::string type = at(key).string();
  for (const std::string_view s : supported) {
    if (type == s) return type;
  }
  at(key).fail("{} type '{}' is not supported; supported: {}", what, type,
               fmt::join(supported, ", "));
}

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  CTXPAR_CHECK_INPUT(in.good(), "{} cannot be opened", path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  try {
    return nlohmann::json::parse(buffer.str());
  } catch (const nlohmann::json::parse_error& e) {
    CTXPAR_INPUT_FAIL("{} is not valid JSON (byte {}): {}", path, e.byte, e.what());
  }
}

}  // namespace ctxpar::tokenizer
