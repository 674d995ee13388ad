// Streaming detokenization (vLLM's prefix/read offsets): each generated id yields the text it
// completes, decoded in the context of the tokens before it, so that
//   - text is released only at complete UTF-8 characters: a token that ends inside a
//     character (byte-level or byte-fallback pieces) yields nothing until the character is
//     finished;
//   - the pieces concatenate to decode(prompt + output) minus decode(prompt): a Metaspace
//     token "▁Hello" after a prompt is " Hello", as vLLM streams it (decode(output) alone
//     would strip that space, being the start of a text).
// (One exception: a run of byte-fallback tokens that is not UTF-8 as a whole decodes, in a
// whole decode, to one U+FFFD per byte, including characters a stream has released already.)
// Works with any Tokenizer. Not thread-safe (one per request).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ctxpar/tokenizer/tokenizer.h"

namespace ctxpar::tokenizer {

class IncrementalDetokenizer {
 public:
  // `tokenizer` must outlive this object. The last few prompt ids give the context of the
  // first output token. Ids outside the tokenizer's vocabulary (a model's padded embedding
  // rows, which `tokenizers` decodes to nothing) add no text here, in the prompt or the output.
  IncrementalDetokenizer(const Tokenizer& tokenizer, std::span<const int32_t> prompt_ids,
                         bool skip_special_tokens = true);

  // Adds one generated id; returns the newly completed text (often empty for byte pieces).
  std::string add(int32_t id);
  // The generation ended: returns what is still held back (an unfinished character, decoded
  // as U+FFFD the way a whole decode shows it).
  std::string finish();

  // Every piece returned so far, concatenated.
  const std::string& text() const { return text_; }

 private:
  std::string decode_from(size_t begin, size_t end) const;  // decode of ids_[begin, end)
  // Where the text of the unread ids starts in `full`, the decode of ids_[prefix_offset_, end).
  size_t new_text_start(const std::string& full) const;
  // Releases full[start, end); the unread ids become the context.
  std::string release(const std::string& full, size_t start);

  const Tokenizer& tokenizer_;
  bool skip_special_tokens_;
  std::vector<int32_t> ids_;  // the context window and the new ids
  size_t prefix_offset_ = 0;  // ids_[prefix, read) is context already turned into text
  size_t read_offset_ = 0;    // ids_[read, end) is not released yet
  std::string prefix_text_;   // decode of ids_[prefix, read)
  std::string text_;
};

}  // namespace ctxpar::tokenizer
