// tokenizer.json "pre_tokenizer": splits the pieces of the text into pre-tokens (the units
// the model tokenizes independently) and may rewrite them (ByteLevel, Metaspace).
#pragma once

#include <memory>

#include "ctxpar/tokenizer/json_node.h"
#include "ctxpar/tokenizer/pretokenized.h"

namespace ctxpar::tokenizer {

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void pre_tokenize(PreTokenized& text) const = 0;
};

// The ByteLevel pre-tokenizer: optional prefix space, the GPT-2 split regex, then every byte
// of a pre-token becomes one of 256 printable characters (GPT-2's bytes_to_unicode).
class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
      : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {}
  void pre_tokenize(PreTokenized& text) const override;
  // Leave the pre-tokens as raw bytes: the BPE model then does the byte mapping itself
  // (BpeModel::use_raw_bytes). Only valid when this is the last pre-tokenizer.
  void leave_bytes_unmapped() { map_bytes_ = false; }

 private:
  bool add_prefix_space_, use_regex_;
  bool map_bytes_ = true;
};

// Builds the pre-tokenizer of a tokenizer.json "pre_tokenizer" value (null: nullptr).
// Supported types: ByteLevel, Split, Digits, Metaspace, Whitespace, WhitespaceSplit,
// Punctuation, BertPreTokenizer, Sequence; anything else throws ctxpar::InputError naming the
// file, the JSON path and the supported types.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonNode& node);

// The ByteLevel pre-tokenizer that runs last, if any (the last step of a Sequence counts).
ByteLevelPreTokenizer* final_byte_level(PreTokenizer* pre_tokenizer);

// GPT-2's byte → character table: byte b is the character byte_level_char(b).
char32_t byte_level_char(unsigned char b);
// The inverse: the byte of a byte-level character, or -1 for a character outside the table.
int byte_level_byte(char32_t c);

}  // namespace ctxpar::tokenizer
