// The built-in models' tokenizer: ids 0..255 are the bytes of the UTF-8 text, ids 256 up to
// the model's vocabulary are special tokens (BOS, EOS, ...) that no text encodes to. Any
// byte string round-trips.
#pragma once

#include <cstdint>
#include <optional>

#include "ctxpar/tokenizer/tokenizer.h"

namespace ctxpar::tokenizer {

class ByteTokenizer final : public Tokenizer {
 public:
  static constexpr int32_t kNumByteTokens = 256;

  // vocab_size >= 256 (the model's); bos_token_id, when given, must be a special id in
  // [256, vocab_size): encode() with add_special_tokens prepends it.
  explicit ByteTokenizer(int32_t vocab_size = kNumByteTokens,
                         std::optional<int32_t> bos_token_id = std::nullopt);

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const override;
  // Returns the bytes as they are (a prefix of a generation may end inside a UTF-8
  // character); special id 257 is written "<|257|>" unless skipped.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = true) const override;
  int32_t vocab_size() const override { return vocab_size_; }
  std::optional<std::string> id_to_token(int32_t id) const override;
  // The byte of ids 0..255; nullopt for the special ids.
  std::optional<std::string> token_bytes(int32_t id) const override;

 private:
  int32_t vocab_size_;
  std::optional<int32_t> bos_token_id_;
};

}  // namespace ctxpar::tokenizer
