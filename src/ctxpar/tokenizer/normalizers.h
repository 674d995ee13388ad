// tokenizer.json "normalizer": rewrites the text of each piece before pre-tokenization (and
// the content of added tokens marked "normalized").
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ctxpar/tokenizer/json_node.h"

namespace ctxpar::tokenizer {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Rewrites `text` (valid UTF-8). `origin`: how many leading bytes stand for input offset 0;
  // updated to the same count in the new text.
  virtual void normalize(std::string& text, uint32_t& origin) const = 0;
};

// Builds the normalizer of a tokenizer.json "normalizer" value (null: nullptr). Supported
// types: NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace, Strip, StripAccents, Sequence;
// anything else throws ctxpar::InputError naming the file, the JSON path and the supported types.
std::unique_ptr<Normalizer> make_normalizer(const JsonNode& node);

}  // namespace ctxpar::tokenizer
