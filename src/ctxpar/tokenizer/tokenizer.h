// Tokenizer: text <-> token ids (DESIGN.md §5, the tokenizer layer). The engine and the
// server see only this interface; the model layers never see text.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ctxpar::tokenizer {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Token ids of `text`. add_special_tokens adds what the model's post-processor adds (BOS
  // for most models), as Hugging Face's `encode(text, add_special_tokens=...)` does.
  virtual std::vector<int32_t> encode(std::string_view text,
                                      bool add_special_tokens = true) const = 0;

  // Text of `ids`. skip_special_tokens leaves special tokens out, as Hugging Face's
  // `decode(ids, skip_special_tokens=...)` does. Throws ctxpar::InputError for an id outside
  // [0, vocab_size()).
  virtual std::string decode(std::span<const int32_t> ids,
                             bool skip_special_tokens = true) const = 0;

  // Number of ids, added tokens included (the largest id + 1).
  virtual int32_t vocab_size() const = 0;

  // The token as the vocabulary spells it (e.g. "Ġhello" for byte-level BPE), or nullopt for
  // an id outside the vocabulary.
  virtual std::optional<std::string> id_to_token(int32_t id) const = 0;

  // The bytes token `id` adds to a decoded text in the middle of a generation (possibly part of
  // a UTF-8 character), or nullopt for a special token or an id without a token: what
  // structured outputs match tokens by.
  virtual std::optional<std::string> token_bytes(int32_t id) const = 0;
};

}  // namespace ctxpar::tokenizer
