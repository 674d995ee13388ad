#include "ctxpar/tokenizer/byte_tokenizer.h"

#include <fmt/format.h>

#include "ctxpar/core/error.h"

namespace ctxpar::tokenizer {

ByteTokenizer::ByteTokenizer(int32_t vocab_size, std::optional<int32_t> bos_token_id)
    : vocab_size_(vocab_size), bos_token_id_(bos_token_id) {
  CTXPAR_CHECK(vocab_size >= kNumByteTokens,
               "a byte-level tokenizer needs a vocabulary of at least {} ids, not {}",
               kNumByteTokens, vocab_size);
  CTXPAR_CHECK(!bos_token_id || (*bos_token_id >= kNumByteTokens && *bos_token_id < vocab_size),
               "BOS id {} is not a special id of a byte-level tokenizer with {} ids; they are "
               "[{}, {})",
               bos_token_id.value_or(0), vocab_size, kNumByteTokens, vocab_size);
}

std::vector<int32_t> ByteTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() + 1);
  if (add_special_tokens && bos_token_id_) ids.push_back(*bos_token_id_);
  for (const char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

std::string ByteTokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string text;
  text.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    CTXPAR_CHECK_INPUT(id >= 0 && id < vocab_size_,
                       "token id {} at index {} is outside the vocabulary [0, {})", id, i,
                       vocab_size_);
    if (id < kNumByteTokens) {
      text.push_back(static_cast<char>(static_cast<unsigned char>(id)));
    } else if (!skip_special_tokens) {
      fmt::format_to(std::back_inserter(text), "<|{}|>", id);
    }
  }
  return text;
}

std::optional<std::string> ByteTokenizer::id_to_token(int32_t id) const {
  if (id < 0 || id >= vocab_size_) return std::nullopt;
  if (id < kNumByteTokens) return std::string(1, static_cast<char>(static_cast<unsigned char>(id)));
  return fmt::format("<|{}|>", id);
}

std::optional<std::string> ByteTokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= kNumByteTokens) return std::nullopt;
  return std::string(1, static_cast<char>(static_cast<unsigned char>(id)));
}

}  // namespace ctxpar::tokenizer
