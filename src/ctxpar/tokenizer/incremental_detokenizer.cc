#include "ctxpar/tokenizer/incremental_detokenizer.h"

#include <algorithm>

#include "ctxpar/tokenizer/utf8.h"

namespace ctxpar::tokenizer {
namespace {

// Context tokens before the unread ones (vLLM keeps 5), and how far back into the prompt the
// context may reach to start at a whole character.
constexpr size_t kContextTokens = 5;
constexpr size_t kPrimingTokens = 32;

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
  const int32_t vocab = tokenizer_.vocab_size();
  for (auto it = prompt_ids.rbegin(); it != prompt_ids.rend() && ids_.size() < kPrimingTokens;
       ++it) {
    if (*it >= 0 && *it < vocab) ids_.push_back(*it);
  }
  std::reverse(ids_.begin(), ids_.end());
  read_offset_ = ids_.size();
  prefix_offset_ = read_offset_ > kContextTokens ? read_offset_ - kContextTokens : 0;
  prefix_text_ = decode_from(prefix_offset_, read_offset_);
  // A context that starts inside a character (the tail of a byte-fallback run) decodes as
  // U+FFFD and can spoil the run the output continues: start earlier.
  while (prefix_offset_ > 0 && prefix_text_.starts_with(utf8::kReplacementUtf8)) {
    prefix_text_ = decode_from(--prefix_offset_, read_offset_);
  }
}

std::string IncrementalDetokenizer::decode_from(size_t begin, size_t end) const {
  return tokenizer_.decode(std::span<const int32_t>(ids_).subspan(begin, end - begin),
                           skip_special_tokens_);
}

size_t IncrementalDetokenizer::new_text_start(const std::string& full) const {
  // The context decodes the same at the start of the longer window except where its last
  // character was unfinished (a U+FFFD that the new bytes complete): the new text starts
  // where the two differ, at a character boundary.
  size_t common = 0;
  while (common < prefix_text_.size() && common < full.size() &&
         prefix_text_[common] == full[common]) {
    ++common;
  }
  while (common > 0 && common < full.size() &&
         (static_cast<unsigned char>(full[common]) & 0xC0) == 0x80) {
    --common;
  }
  return common;
}

std::string IncrementalDetokenizer::release(const std::string& full, size_t start) {
  std::string piece = full.substr(start);
  prefix_offset_ = read_offset_;
  read_offset_ = ids_.size();
  // Only ids_[prefix_offset_, end) are decoded again: drop the rest now and then.
  if (prefix_offset_ > 64) {
    ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_offset_));
    read_offset_ -= prefix_offset_;
    prefix_offset_ = 0;
  }
  prefix_text_ = decode_from(prefix_offset_, read_offset_);
  text_ += piece;
  return piece;
}

std::string IncrementalDetokenizer::add(int32_t id) {
  if (id < 0 || id >= tokenizer_.vocab_size()) return std::string();
  ids_.push_back(id);
  const std::string full = decode_from(prefix_offset_, ids_.size());
  // Nothing new yet (a skipped special token, a space a decoder strips at the start of a
  // text, an unfinished character): keep the ids unread and the context as it is.
  const size_t start = new_text_start(full);
  if (start == full.size() || ends_unfinished(full)) return std::string();
  return release(full, start);
}

std::string IncrementalDetokenizer::finish() {
  if (read_offset_ == ids_.size()) return std::string();
  const std::string full = decode_from(prefix_offset_, ids_.size());
  const size_t start = new_text_start(full);
  if (start == full.size()) return std::string();
  return release(full, start);
}

}  // namespace ctxpar::tokenizer
