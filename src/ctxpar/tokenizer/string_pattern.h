// The pattern of Split, Replace (normalizer and decoder): {"String": "literal"} or
// {"Regex": "..."} in tokenizer.json.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ctxpar/tokenizer/json_node.h"
#include "ctxpar/tokenizer/pretokenized.h"
#include "ctxpar/tokenizer/regex.h"

namespace ctxpar::tokenizer {

class StringPattern {
 public:
  // Throws ctxpar::InputError naming the field when it is neither form or the regex is invalid.
  explicit StringPattern(const JsonNode& node);

  // Non-overlapping matches of `text`, leftmost first.
  void find_all(std::string_view text, std::vector<Span>& out) const;
  // The matches as segments covering `text` (an empty text: one empty non-match).
  void segments(std::string_view text, std::vector<Segment>& out) const;

 private:
  std::string literal_;
  std::optional<Regex> regex_;
};

}  // namespace ctxpar::tokenizer
