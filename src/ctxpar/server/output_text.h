// OutputText: one choice's output text while it streams, as vLLM's detokenizer and stop-string
// check produce it: the tokenizer layer's incremental detokenizer (primed with the prompt, text
// released at whole characters) and stop-string matcher (a stop string may span tokens; text
// that could still begin one is held back; on a match the text is cut before the string, or
// after it with include_stop_str_in_output, and the choice ends with finish_reason "stop" and
// the string as stop_reason). The tokenizer must decode to valid UTF-8 (ValidTextTokenizer). As in
// vLLM, stop strings are looked for only once more than min_tokens tokens were generated (text
// from before that is not searched).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ctxpar/tokenizer/incremental_detokenizer.h"
#include "ctxpar/tokenizer/stop_strings.h"
#include "ctxpar/tokenizer/tokenizer.h"

namespace ctxpar::server {

struct StopStrings {
  std::vector<std::string> strings;  // none empty
  bool include_in_output = false;
  int64_t min_tokens = 0;
};

class OutputText {
 public:
  // `tokenizer` must outlive this and decode to valid UTF-8 (an invalid byte as U+FFFD).
  OutputText(const tokenizer::Tokenizer& tokenizer, std::span<const int32_t> prompt_token_ids,
             const StopStrings& stop, bool skip_special_tokens);

  struct Delta {
    std::string text;                        // new text to show
    std::optional<std::string> stop_string;  // set once: the output ends here
    // Tokens that count: all so far, or up to the one that completed the stop string.
    int64_t num_tokens = 0;
  };
  // Adds the next output tokens (the request's last ones when `finished`, which flushes
  // everything held back). After a stop string matched, later calls return nothing new.
  // `stop_terminated`: the last of them is the EOS or stop token that ended the request; as in
  // vLLM's detokenizer it counts, but its text is left out unless include_stop_str_in_output.
  Delta add(std::span<const int32_t> token_ids, bool finished, bool stop_terminated = false);

  const std::string& text() const { return text_; }  // everything emitted so far
  bool stopped() const { return stop_.has_value(); }

 private:
  // Passes decoded text through the stop-string matcher (once past min_tokens).
  void emit(const std::string& text, Delta& delta);

  tokenizer::IncrementalDetokenizer detokenizer_;
  std::optional<tokenizer::StopStringMatcher> matcher_;
  int64_t min_tokens_;
  int64_t num_tokens_ = 0;
  std::string text_;
  std::optional<std::string> stop_;
  bool include_stop_;  // StopStrings::include_in_output
};

}  // namespace ctxpar::server
