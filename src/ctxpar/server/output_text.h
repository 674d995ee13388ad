// OutputText: one choice's output text while it streams (vLLM's detokenizer and stop-string
// check, as the server needs them). Decodes the output tokens incrementally, emits only whole
// UTF-8 characters (invalid bytes as U+FFFD), and matches stop strings across token
// boundaries: while streaming, the last max(len(stop)) - 1 characters are held back, since they
// could still begin a stop string. On a match the text is cut before the stop string (after
// it with include_stop_str_in_output) and the choice ends with finish_reason "stop" and the
// string as stop_reason. As in vLLM, stop strings are looked for only once more than
// min_tokens tokens were generated.
//
// Interim: the tokenizer layer's incremental detokenizer replaces the decoding here once it
// lands; the stop-string rules stay as they are.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ctxpar/tokenizer/tokenizer.h"

namespace ctxpar::server {

struct StopStrings {
  std::vector<std::string> strings;  // none empty
  bool include_in_output = false;
  int64_t min_tokens = 0;
};

class OutputText {
 public:
  // `tokenizer` must outlive this.
  OutputText(const tokenizer::Tokenizer& tokenizer, StopStrings stop, bool skip_special_tokens);

  struct Delta {
    std::string text;                        // new text to show
    std::optional<std::string> stop_string;  // set once: the output ends here
    // Tokens that count: all so far, or up to the one that completed the stop string.
    int64_t num_tokens = 0;
  };
  // Adds the next output tokens (the request's last ones when `finished`, which flushes
  // everything held back). After a stop string matched, later calls return nothing new.
  Delta add(std::span<const int32_t> token_ids, bool finished);

  const std::string& text() const { return text_; }  // everything emitted so far
  bool stopped() const { return stop_.has_value(); }

 private:
  const tokenizer::Tokenizer& tokenizer_;
  StopStrings stops_;
  bool skip_special_tokens_;
  size_t max_stop_length_ = 0;  // in characters

  std::vector<int32_t> ids_;
  size_t prefix_offset_ = 0;  // decode window: ids_[prefix_offset_, read_offset_) decoded
  size_t read_offset_ = 0;
  std::string raw_;        // decoded bytes not yet turned into text
  std::string candidate_;  // valid text not yet emitted (held back for stop strings)
  std::string text_;       // emitted
  std::optional<std::string> stop_;
  int64_t counted_tokens_ = 0;
};

}  // namespace ctxpar::server
