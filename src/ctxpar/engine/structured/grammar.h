// Grammar: a JSON schema compiled into a graph of nodes that the byte-level matcher
// (json_automaton.h) walks. Tokenizer-independent.
//
// Concrete nodes describe one JSON value: an object, an array, a string (its content matched by
// a regex when the schema gives a pattern or format), a number or a literal (the exact bytes of
// a const, an enum value, true, false or null); or, as the root only, raw text a regex matches
// (structured_outputs {"regex": ...}). Union nodes (anyOf, oneOf,
// type arrays, enums, $ref) only point at other nodes; compile() flattens every node into the
// list of concrete nodes a value may start as (`alternatives`), so the matcher never follows a
// union at run time.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ctxpar/engine/structured/byte_dfa.h"

namespace ctxpar::structured {

enum class NodeKind : uint8_t { kObject, kArray, kString, kNumber, kLiteral, kRegex, kUnion };

struct ObjectNode {
  struct Property {
    std::string key;  // the key's bytes between the quotes, as the grammar demands them
    int32_t value = -1;
    bool required = false;
  };
  std::vector<Property> properties;  // in the schema's order: the order they must appear in
  // Property indices sorted by key bytes: the keys that begin with a prefix are a range.
  std::vector<int32_t> by_key;
  int32_t additional = -1;  // node of properties not declared (after the declared ones); -1: none
  int32_t last_required = -1;  // index of the last required property; -1: none
  // next_required[i]: the first required index >= i, or properties.size() (size n + 1).
  std::vector<int32_t> next_required;
  // required_after[i]: required properties with index > i (size n).
  std::vector<int32_t> required_after;
  int64_t min_properties = 0;
  int64_t max_properties = -1;  // -1: unbounded
};

struct ArrayNode {
  std::vector<int32_t> prefix;  // prefixItems: every one must be present, in order
  int32_t items = -1;           // node of the items after the prefix; -1: none allowed
  int64_t min_items = 0;
  int64_t max_items = -1;  // -1: unbounded
};

struct StringNode {
  int64_t min_length = 0;  // code points, as Python's len() counts them
  int64_t max_length = -1;
  // Index into Grammar::regexes of the content's pattern (RegexText::kJsonString), or -1. With
  // a pattern the lengths are ignored, as xgrammar ignores them.
  int32_t pattern = -1;
};

struct NumberNode {
  bool integer = false;
  // Integers: inclusive bounds (exclusive ones are folded in).
  std::optional<int64_t> minimum, maximum;
  // Numbers: bounds as doubles (Python's floats, which jsonschema compares), each inclusive or
  // exclusive. A bounded number is written without an exponent, in at most kMaxRealDigits
  // digits (as xgrammar's range grammars have no exponent either).
  std::optional<double> lower, upper;
  bool lower_exclusive = false, upper_exclusive = false;
  static constexpr int32_t kMaxRealDigits = 18;
};

struct Node {
  NodeKind kind = NodeKind::kUnion;
  ObjectNode object;
  ArrayNode array;
  StringNode string;
  NumberNode number;
  // kLiteral: the exact bytes (compact JSON, or any non-empty text in a choice grammar)
  std::string literal;
  int32_t regex = -1;            // kRegex: index into Grammar::regexes (RegexText::kRaw)
  std::vector<int32_t> members;  // kUnion: the nodes it may be (before flattening)
  // Filled by Grammar::finalize(): the concrete nodes a value of this node starts as.
  std::vector<int32_t> alternatives;
};

struct Grammar {
  std::vector<Node> nodes;
  std::vector<ByteDfa> regexes;
  int32_t root = -1;
  // xgrammar's any_whitespace (vLLM's default): whitespace runs between tokens. false: the
  // compact form json.dumps writes, ", " and ": " (vLLM's disable_any_whitespace).
  bool any_whitespace = true;

  int32_t add(Node node) {
    nodes.push_back(std::move(node));
    return static_cast<int32_t>(nodes.size()) - 1;
  }
  std::span<const int32_t> alternatives(int32_t node) const {
    return nodes[static_cast<size_t>(node)].alternatives;
  }
  // Flattens unions into `alternatives` and precomputes the object tables. Throws
  // ctxpar::InputError for a union that reaches itself without reading a byte (a $ref or anyOf
  // loop) and for a schema no value satisfies (a node with no alternatives).
  void finalize();
};

}  // namespace ctxpar::structured
