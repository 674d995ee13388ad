// tokenizer.json "decoder": turns the tokens of a decode call back into text, as a chain that
// rewrites the list of token strings (`tokenizers`' decode_chain), joined at the end.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ctxpar/tokenizer/json_node.h"

namespace ctxpar::tokenizer {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
  // The exact bytes one token decodes to anywhere in a text, when this decoder knows them
  // without context (ByteLevel: its table; ByteFallback: "<0xAB>"); nullopt otherwise.
  virtual std::optional<std::string> raw_bytes(const std::string& token) const {
    (void)token;
    return std::nullopt;
  }
};

// Builds the decoder of a tokenizer.json "decoder" value (null: nullptr, tokens are joined
// with spaces). Supported types: ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace,
// BPEDecoder, Sequence; anything else throws ctxpar::InputError naming the file, the path and the
// supported types.
std::unique_ptr<Decoder> make_decoder(const JsonNode& node);

}  // namespace ctxpar::tokenizer
