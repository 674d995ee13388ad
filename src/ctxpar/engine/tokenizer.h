// Tokenizers: text <-> token ids. The built-in models use ByteTokenizer; a Hugging Face
// tokenizer can implement the same interface later.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ctxpar::engine {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Token ids of `text`, with the model's BOS first when it has one.
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  // Text of `ids` (negative ids throw ctxpar::Error). Decoding a prefix of a generation may
  // end inside a multi-byte UTF-8 character; the bytes are returned as they are.
  virtual std::string decode(std::span<const int32_t> ids) const = 0;
};

// The built-in models' tokenizer: ids 0..255 are the bytes of the UTF-8 text, ids >= 256 are
// special tokens (BOS, EOS, ...) that no text encodes to. Any byte string round-trips.
class ByteTokenizer final : public Tokenizer {
 public:
  static constexpr int32_t kNumByteTokens = 256;

  enum class SpecialTokens : uint8_t {
    kSkip,    // decode leaves them out (the text a user sees)
    kRender,  // decode writes id 257 as "<|257|>" (debugging)
  };

  // bos_token_id, when given, must be a special id (>= 256); it is prepended by encode().
  explicit ByteTokenizer(std::optional<int32_t> bos_token_id = std::nullopt,
                         SpecialTokens special_tokens = SpecialTokens::kSkip);

  std::vector<int32_t> encode(std::string_view text) const override;
  std::string decode(std::span<const int32_t> ids) const override;

 private:
  std::optional<int32_t> bos_token_id_;
  SpecialTokens special_tokens_;
};

}  // namespace ctxpar::engine
