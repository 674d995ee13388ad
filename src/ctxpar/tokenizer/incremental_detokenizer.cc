#include "ctxpar/tokenizer/incremental_detokenizer.h"

#include <algorithm>

#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::tokenizer {
namespace {

// Context tokens kept before the unread ones (vLLM keeps 5 of the prompt's last 7 tokens).
constexpr size_t kContextTokens = 5;
constexpr size_t kPrimingTokens = kContextTokens + 2;

// Whether decoded text may still change at its end: an unfinished UTF-8 character (the byte
// tokenizer) or the U+FFFD a tokenizer writes for one (byte-level and byte-fallback decoders).
bool ends_unfinished(std::string_view text) {
  return utf8::unfinished_suffix(text) > 0 || text.ends_with(utf8::kReplacementUtf8);
}

}  // namespace

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer,
                                               std::span<const int32_t> prompt_ids,
                                               bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens) {
  const size_t n = std::min(prompt_ids.size(), kPrimingTokens);
  ids_.assign(prompt_ids.end() - static_cast<std::ptrdiff_t>(n), prompt_ids.end());
  tokenizer_.decode(ids_, skip_special_tokens_);  // rejects out-of-vocabulary prompt ids
  prefix_offset_ = ids_.size() > kContextTokens ? ids_.size() - kContextTokens : 0;
  read_offset_ = ids_.size();
}

std::string IncrementalDetokenizer::window_text() const {
  return tokenizer_.decode(std::span<const int32_t>(ids_).subspan(prefix_offset_),
                           skip_special_tokens_);
}

std::string IncrementalDetokenizer::release(const std::string& full) {
  const std::string prefix = tokenizer_.decode(
      std::span<const int32_t>(ids_).subspan(prefix_offset_, read_offset_ - prefix_offset_),
      skip_special_tokens_);
  // The context decodes the same inside the longer window except in pathological decoders;
  // then only the text after their common prefix is new.
  size_t common = 0;
  while (common < prefix.size() && common < full.size() && prefix[common] == full[common]) {
    ++common;
  }
  std::string piece = full.size() > common ? full.substr(common) : std::string();
  prefix_offset_ = read_offset_;
  read_offset_ = ids_.size();
  // Keep the window short: only ids_[prefix_offset_, end) are ever decoded again.
  if (prefix_offset_ > 64) {
    ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_offset_));
    read_offset_ -= prefix_offset_;
    prefix_offset_ = 0;
  }
  text_ += piece;
  return piece;
}

std::string IncrementalDetokenizer::add(int32_t id) {
  ids_.push_back(id);
  const std::string full = window_text();
  if (ends_unfinished(full)) return std::string();
  return release(full);
}

std::string IncrementalDetokenizer::finish() {
  if (read_offset_ == ids_.size()) return std::string();
  return release(window_text());
}

}  // namespace ctxpar::tokenizer
