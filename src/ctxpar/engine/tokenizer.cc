#include "ctxpar/engine/tokenizer.h"

#include <fmt/format.h>

#include "ctxpar/core/error.h"

namespace ctxpar::engine {

ByteTokenizer::ByteTokenizer(std::optional<int32_t> bos_token_id, SpecialTokens special_tokens)
    : bos_token_id_(bos_token_id), special_tokens_(special_tokens) {
  CTXPAR_CHECK(!bos_token_id || *bos_token_id >= kNumByteTokens,
               "BOS id {} would be the byte {}; a byte-level tokenizer's special ids are >= {}",
               bos_token_id.value_or(0), bos_token_id.value_or(0), kNumByteTokens);
}

std::vector<int32_t> ByteTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() + 1);
  if (bos_token_id_) ids.push_back(*bos_token_id_);
  for (const char c : text) ids.push_back(static_cast<unsigned char>(c));
  return ids;
}

std::string ByteTokenizer::decode(std::span<const int32_t> ids) const {
  std::string text;
  text.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    CTXPAR_CHECK(id >= 0, "token id {} at index {} is negative; ids are >= 0", id, i);
    if (id < kNumByteTokens) {
      text.push_back(static_cast<char>(static_cast<unsigned char>(id)));
    } else if (special_tokens_ == SpecialTokens::kRender) {
      fmt::format_to(std::back_inserter(text), "<|{}|>", id);
    }
  }
  return text;
}

}  // namespace ctxpar::engine
