#include "ctxpar/engine/structured/schema_compiler.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "ctxpar/core/error.h"
#include "ctxpar/engine/structured/byte_dfa.h"
#include "ctxpar/engine/structured/string_formats.h"

namespace ctxpar::structured {
namespace {

// ordered_json: property order is part of the grammar (the schema's order).
using json = nlohmann::ordered_json;

const std::set<std::string>& annotations() {
  static const std::set<std::string> k = {"title",    "description", "default",  "examples",
                                          "$schema",  "$id",         "$comment", "deprecated",
                                          "readOnly", "writeOnly"};
  return k;
}

const std::set<std::string>& supported() {
  static const std::set<std::string> k = {"type",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "items",
                                          "prefixItems",
                                          "minItems",
                                          "maxItems",
                                          "enum",
                                          "const",
                                          "anyOf",
                                          "oneOf",
                                          "allOf",
                                          "$ref",
                                          "$defs",
                                          "definitions",
                                          "minLength",
                                          "maxLength",
                                          "minProperties",
                                          "maxProperties",
                                          "pattern",
                                          "format",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum"};
  return k;
}

// Keywords that constrain a value (everything supported but the containers of definitions).
bool constrains(const std::string& key) {
  return supported().count(key) != 0 && key != "$defs" && key != "definitions";
}

std::string where(const std::string& path) {
  return path.empty() ? "the root" : path;
}

class Compiler {
 public:
  Compiler(const json& root, bool any_whitespace) : root_(root) {
    g_.any_whitespace = any_whitespace;
  }

  Grammar run() {
    g_.root = compile(root_, "");
    g_.finalize();
    return std::move(g_);
  }

 private:
  [[noreturn]] static void fail(const std::string& path, const std::string& what) {
    CTXPAR_INPUT_FAIL("JSON schema at {}: {}", where(path), what);
  }

  int32_t any_value() {
    if (any_ >= 0) return any_;
    Node u;
    u.kind = NodeKind::kUnion;
    any_ = g_.add(std::move(u));
    std::vector<int32_t> members;
    for (const char* t : {"object", "array", "string", "number", "boolean", "null"}) {
      members.push_back(typed(json::object(), t, "", /*plain=*/true));
    }
    g_.nodes[static_cast<size_t>(any_)].members = std::move(members);
    return any_;
  }

  int32_t literal(const json& value) {
    Node n;
    n.kind = NodeKind::kLiteral;
    n.literal = value.dump();
    return g_.add(std::move(n));
  }

  int32_t union_of(std::vector<int32_t> members) {
    Node n;
    n.kind = NodeKind::kUnion;
    n.members = std::move(members);
    return g_.add(std::move(n));
  }

  static int64_t non_negative(const json& s, const char* key, const std::string& path) {
    const json& v = s.at(key);
    if (!v.is_number_integer() && !v.is_number_unsigned()) {
      if (!(v.is_number_float() && std::floor(v.get<double>()) == v.get<double>())) {
        fail(path, fmt::format("`{}` must be a non-negative integer, got {}", key, v.dump()));
      }
    }
    const double d = v.get<double>();
    if (d < 0 || d > 9.0e15) {
      fail(path, fmt::format("`{}` must be a non-negative integer, got {}", key, v.dump()));
    }
    return static_cast<int64_t>(d);
  }

  // The regex a string's content must match: its format when xgrammar knows the format (the
  // format wins over a pattern, as there), else its pattern; -1 when neither applies.
  int32_t string_pattern(const json& s, const std::string& path) {
    std::optional<std::string> regex;
    const char* from = "pattern";
    for (const char* key : {"format", "pattern"}) {
      if (!s.contains(key)) continue;
      if (!s.at(key).is_string()) {
        fail(path, fmt::format("`{}` must be a string, got {}", key, s.at(key).dump()));
      }
    }
    if (s.contains("format")) {
      if (const auto r = format_regex(s.at("format").get<std::string>())) {
        regex = std::string(*r);
        from = "format";
      }
    }
    if (!regex && s.contains("pattern")) regex = s.at("pattern").get<std::string>();
    if (!regex) return -1;
    const auto [it, fresh] = patterns_.emplace(*regex, static_cast<int32_t>(g_.regexes.size()));
    if (!fresh) return it->second;
    try {
      g_.regexes.push_back(compile_regex(*regex, RegexText::kJsonString));
    } catch (const InputError& e) {
      patterns_.erase(it);
      fail(path, fmt::format("`{}` {}: {}", from, s.at(from).dump(), e.what()));
    }
    return it->second;
  }

  int32_t compile(const json& s, const std::string& path) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail(path, "the schema `false` allows no value");
      return any_value();
    }
    if (!s.is_object())
      fail(path, fmt::format("a schema must be an object or a boolean, got {}", s.dump()));
    for (const auto& [key, value] : s.items()) {
      if (supported().count(key) == 0 && annotations().count(key) == 0) {
        fail(path,
             fmt::format("the keyword `{}` is not supported by ctxpar's structured outputs", key));
      }
    }
    const auto sibling = [&](const char* main) {
      for (const auto& [key, value] : s.items()) {
        if (key != main && constrains(key)) {
          fail(path, fmt::format("`{}` beside `{}` is not supported by ctxpar's structured "
                                 "outputs",
                                 key, main));
        }
      }
    };
    if (s.contains("$ref")) {
      sibling("$ref");
      return reference(s.at("$ref"), path);
    }
    if (s.contains("const")) return literal(s.at("const"));
    if (s.contains("enum")) {
      const json& e = s.at("enum");
      if (!e.is_array() || e.empty()) fail(path, "`enum` must be a non-empty list");
      std::vector<int32_t> members;
      for (const json& v : e) members.push_back(literal(v));
      return union_of(std::move(members));
    }
    for (const char* key : {"anyOf", "oneOf", "allOf"}) {
      if (!s.contains(key)) continue;
      sibling(key);
      const json& list = s.at(key);
      if (!list.is_array() || list.empty())
        fail(path, fmt::format("`{}` must be a non-empty list", key));
      if (std::string(key) == "allOf" && list.size() != 1) {
        fail(path,
             "`allOf` with more than one schema is not supported by ctxpar's structured "
             "outputs");
      }
      std::vector<int32_t> members;
      for (size_t i = 0; i < list.size(); ++i) {
        members.push_back(compile(list[i], fmt::format("{}/{}/{}", path, key, i)));
      }
      return union_of(std::move(members));
    }
    std::vector<std::string> types;
    if (s.contains("type")) {
      const json& t = s.at("type");
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array() && !t.empty()) {
        for (const json& x : t) {
          if (!x.is_string())
            fail(path, fmt::format("`type` entries must be strings, got {}", x.dump()));
          types.push_back(x.get<std::string>());
        }
      } else {
        fail(path, fmt::format("`type` must be a string or a non-empty list, got {}", t.dump()));
      }
    } else if (s.contains("properties") || s.contains("additionalProperties")) {
      types = {"object"};
    } else if (s.contains("items") || s.contains("prefixItems")) {
      types = {"array"};
    } else {
      types = {"object", "array", "string", "number", "boolean", "null"};
    }
    std::vector<int32_t> members;
    for (const std::string& t : types) members.push_back(typed(s, t, path, false));
    return members.size() == 1 ? members[0] : union_of(std::move(members));
  }

  // One type's node with the keywords of `s` that apply to it. `plain`: the any-value parts.
  int32_t typed(const json& s, const std::string& type, const std::string& path, bool plain) {
    Node n;
    if (type == "object") {
      n.kind = NodeKind::kObject;
      object(s, path, n.object, plain);
    } else if (type == "array") {
      n.kind = NodeKind::kArray;
      array(s, path, n.array, plain);
    } else if (type == "string") {
      n.kind = NodeKind::kString;
      if (s.contains("minLength")) n.string.min_length = non_negative(s, "minLength", path);
      if (s.contains("maxLength")) n.string.max_length = non_negative(s, "maxLength", path);
      if (n.string.max_length >= 0 && n.string.min_length > n.string.max_length) {
        fail(path, "`minLength` is greater than `maxLength`");
      }
      n.string.pattern = string_pattern(s, path);
    } else if (type == "number" || type == "integer") {
      n.kind = NodeKind::kNumber;
      n.number.integer = type == "integer";
      bounds(s, path, n.number);
    } else if (type == "boolean") {
      return union_of({literal(true), literal(false)});
    } else if (type == "null") {
      return literal(nullptr);
    } else {
      fail(path, fmt::format("unknown `type` \"{}\" (valid: object, array, string, number, "
                             "integer, boolean, null)",
                             type));
    }
    return g_.add(std::move(n));
  }

  void object(const json& s, const std::string& path, ObjectNode& o, bool plain) {
    if (plain) {
      o.additional = any_value();
      return;
    }
    std::set<std::string> declared;
    if (s.contains("properties")) {
      const json& props = s.at("properties");
      if (!props.is_object()) fail(path, "`properties` must be an object");
      for (const auto& [key, value] : props.items()) {
        ObjectNode::Property p;
        const std::string quoted = json(key).dump();
        p.key = quoted.substr(1, quoted.size() - 2);
        p.value = compile(value, path + "/properties/" + key);
        declared.insert(key);
        o.properties.push_back(std::move(p));
      }
    }
    if (s.contains("required")) {
      const json& req = s.at("required");
      if (!req.is_array()) fail(path, "`required` must be a list of strings");
      for (const json& r : req) {
        if (!r.is_string()) fail(path, "`required` must be a list of strings");
        const std::string name = r.get<std::string>();
        if (declared.count(name) == 0) {
          fail(path, fmt::format("`required` names \"{}\", which `properties` does not declare; "
                                 "ctxpar's structured outputs need required keys declared",
                                 name));
        }
        size_t i = 0;
        for (const auto& [key, value] : s.at("properties").items()) {
          if (key == name) o.properties[i].required = true;
          ++i;
        }
      }
    }
    if (s.contains("minProperties")) o.min_properties = non_negative(s, "minProperties", path);
    if (s.contains("maxProperties")) o.max_properties = non_negative(s, "maxProperties", path);
    if (s.contains("additionalProperties")) {
      const json& a = s.at("additionalProperties");
      if (a.is_boolean()) {
        o.additional = a.get<bool>() ? any_value() : -1;
      } else {
        o.additional = compile(a, path + "/additionalProperties");
      }
    } else if (!s.contains("properties")) {
      o.additional = any_value();  // a plain {"type": "object"}: any object, as xgrammar
    }
    // Some object must satisfy the counts (the matcher relies on it to never get stuck).
    int64_t required = 0;
    for (const ObjectNode::Property& p : o.properties) required += p.required ? 1 : 0;
    const int64_t need = std::max(required, o.min_properties);
    if (o.max_properties >= 0 && need > o.max_properties) {
      fail(path, fmt::format("no object has at least {} properties ({}) and at most {} "
                             "(`maxProperties`)",
                             need, need == required ? "`required`" : "`minProperties`",
                             o.max_properties));
    }
    if (o.additional < 0 && need > static_cast<int64_t>(o.properties.size())) {
      fail(path, fmt::format("`minProperties` {} is more than the {} properties the object may "
                             "have",
                             o.min_properties, o.properties.size()));
    }
  }

  void array(const json& s, const std::string& path, ArrayNode& a, bool plain) {
    if (plain) {
      a.items = any_value();
      return;
    }
    if (s.contains("prefixItems")) {
      const json& p = s.at("prefixItems");
      if (!p.is_array()) fail(path, "`prefixItems` must be a list of schemas");
      for (size_t i = 0; i < p.size(); ++i) {
        a.prefix.push_back(compile(p[i], fmt::format("{}/prefixItems/{}", path, i)));
      }
    }
    if (s.contains("items")) {
      const json& it = s.at("items");
      if (it.is_boolean()) {
        a.items = it.get<bool>() ? any_value() : -1;
      } else {
        a.items = compile(it, path + "/items");
      }
    } else if (!s.contains("prefixItems")) {
      a.items = any_value();
    }
    if (s.contains("minItems")) a.min_items = non_negative(s, "minItems", path);
    if (s.contains("maxItems")) a.max_items = non_negative(s, "maxItems", path);
    const auto prefix = static_cast<int64_t>(a.prefix.size());
    int64_t most = a.items < 0 ? prefix : a.max_items;
    if (a.max_items >= 0 && (most < 0 || a.max_items < most)) most = a.max_items;
    if ((most >= 0 && std::max(a.min_items, prefix) > most)) {
      fail(path,
           "no array satisfies `minItems`, `maxItems`, `prefixItems` and `items` together "
           "(ctxpar, as xgrammar, requires every prefixItems entry)");
    }
  }

  void bounds(const json& s, const std::string& path, NumberNode& n) {
    for (const char* key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (!s.contains(key)) continue;
      const json& v = s.at(key);
      if (!v.is_number()) fail(path, fmt::format("`{}` must be a number, got {}", key, v.dump()));
      const double d = v.get<double>();
      if (!n.integer) {
        real_bound(n, key, d);
        continue;
      }
      if (!(std::abs(d) < 9.0e18))
        fail(path, fmt::format("`{}` {} is out of range", key, v.dump()));
      const std::string k = key;
      if (k == "minimum") {
        lift(n.minimum, static_cast<int64_t>(std::ceil(d)), true);
      } else if (k == "exclusiveMinimum") {
        lift(n.minimum, static_cast<int64_t>(std::floor(d)) + 1, true);
      } else if (k == "maximum") {
        lift(n.maximum, static_cast<int64_t>(std::floor(d)), false);
      } else {
        lift(n.maximum, static_cast<int64_t>(std::ceil(d)) - 1, false);
      }
    }
    if (n.minimum && n.maximum && *n.minimum > *n.maximum) {
      fail(path, "no integer lies between the bounds");
    }
    if (n.lower && n.upper &&
        (*n.lower > *n.upper ||
         (*n.lower == *n.upper && (n.lower_exclusive || n.upper_exclusive)))) {
      fail(path, "no number lies between the bounds");
    }
  }

  // The tighter of a number's bound so far and `key` = d (on a tie the exclusive one).
  static void real_bound(NumberNode& n, const std::string& key, double d) {
    const bool exclusive = key.rfind("exclusive", 0) == 0;
    const bool lower = key == "minimum" || key == "exclusiveMinimum";
    std::optional<double>& bound = lower ? n.lower : n.upper;
    bool& bound_exclusive = lower ? n.lower_exclusive : n.upper_exclusive;
    if (!bound || (lower ? d > *bound : d < *bound) || (d == *bound && exclusive)) {
      bound = d;
      bound_exclusive = exclusive;
    }
  }

  // The tighter of the bound so far and b.
  static void lift(std::optional<int64_t>& bound, int64_t b, bool lower) {
    if (!bound || (lower ? b > *bound : b < *bound)) bound = b;
  }

  int32_t reference(const json& ref, const std::string& path) {
    if (!ref.is_string()) fail(path, "`$ref` must be a string");
    const std::string r = ref.get<std::string>();
    if (r.empty() || r[0] != '#') {
      fail(path, fmt::format("`$ref` \"{}\" is not a local reference (\"#...\"); only those are "
                             "supported",
                             r));
    }
    const auto found = refs_.find(r);
    if (found != refs_.end()) return found->second;
    const json* target = &root_;
    if (r.size() > 1) {
      if (r[1] != '/') fail(path, fmt::format("`$ref` \"{}\" is not a JSON pointer", r));
      try {
        target = &root_.at(json::json_pointer(r.substr(1)));
      } catch (const json::exception&) {
        fail(path, fmt::format("`$ref` \"{}\" points at nothing in the schema", r));
      }
    }
    // Registered before compiling the target, so a recursive schema refers back to this node.
    const int32_t id = union_of({});
    refs_.emplace(r, id);
    const int32_t t = compile(*target, r.substr(1));
    g_.nodes[static_cast<size_t>(id)].members = {t};
    return id;
  }

  const json& root_;
  Grammar g_;
  int32_t any_ = -1;
  std::map<std::string, int32_t> refs_;
  std::map<std::string, int32_t> patterns_;  // regex -> index into g_.regexes
};

}  // namespace

Grammar compile_json_schema(const json& schema, bool any_whitespace) {
  return Compiler(schema, any_whitespace).run();
}

Grammar json_object_grammar(bool any_whitespace) {
  return compile_json_schema(json{{"type", "object"}}, any_whitespace);
}

Grammar regex_grammar(std::string_view pattern) {
  Grammar g;
  g.regexes.push_back(compile_regex(pattern, RegexText::kRaw));
  Node root;
  root.kind = NodeKind::kRegex;
  root.regex = 0;
  g.root = g.add(std::move(root));
  g.finalize();
  return g;
}

Grammar choice_grammar(const std::vector<std::string>& choices) {
  CTXPAR_CHECK_INPUT(!choices.empty(), "choice needs at least one string");
  Grammar g;
  Node root;
  root.kind = NodeKind::kUnion;
  for (size_t i = 0; i < choices.size(); ++i) {
    CTXPAR_CHECK_INPUT(!choices[i].empty(), "choice[{}] is empty; every choice needs a character",
                       i);
    Node literal;
    literal.kind = NodeKind::kLiteral;
    literal.literal = choices[i];
    root.members.push_back(g.add(std::move(literal)));
  }
  g.root = g.add(std::move(root));
  g.finalize();
  return g;
}

}  // namespace ctxpar::structured
