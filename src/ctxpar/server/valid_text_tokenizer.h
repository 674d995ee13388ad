// ValidTextTokenizer: a Tokenizer whose decode is always valid UTF-8, every invalid sequence
// replaced by U+FFFD, as Hugging Face's byte-level decoders write it. The built-in models'
// byte tokenizer decodes to the raw bytes, which JSON cannot carry and which the incremental
// detokenizer expects as U+FFFD; the server decodes through this. Everything else forwards.
#pragma once

#include "ctxpar/tokenizer/tokenizer.h"
#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::server {

class ValidTextTokenizer final : public tokenizer::Tokenizer {
 public:
  // `inner` must outlive this.
  explicit ValidTextTokenizer(const tokenizer::Tokenizer& inner) : inner_(inner) {}

  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const override {
    return inner_.encode(text, add_special_tokens);
  }
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const override {
    return tokenizer::utf8::repair(inner_.decode(ids, skip_special_tokens));
  }
  int32_t vocab_size() const override { return inner_.vocab_size(); }
  std::optional<std::string> id_to_token(int32_t id) const override {
    return inner_.id_to_token(id);
  }
  std::optional<std::string> token_bytes(int32_t id) const override {
    return inner_.token_bytes(id);
  }

 private:
  const tokenizer::Tokenizer& inner_;
};

}  // namespace ctxpar::server
