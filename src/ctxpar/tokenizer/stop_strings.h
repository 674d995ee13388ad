// Stop strings over streamed text (vLLM's semantics): a stop string may span any number of
// pieces; text that could still be the start of a stop string is held back until it can no
// longer match; on a match the text is cut before the stop string (or after it with
// include_stop_str_in_output) and generation must end.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ctxpar::tokenizer {

class StopStringMatcher {
 public:
  // Throws ctxpar::InputError for an empty stop string (vLLM rejects "" too).
  explicit StopStringMatcher(std::vector<std::string> stop,
                             bool include_stop_str_in_output = false);

  // Appends streamed text; returns the text that is now final. After a match, returns at most
  // the text up to the cut and ignores anything pushed later.
  std::string push(std::string_view text);
  // The stream ended without a stop string: returns everything still held back.
  std::string flush();

  // The stop string that matched (the first of the list found in the new text, as vLLM
  // checks them), or nullopt.
  const std::optional<std::string>& matched() const { return matched_; }
  // All text so far, cut at the stop string once one matched.
  const std::string& text() const { return text_; }

 private:
  std::vector<std::string> stop_;
  bool include_;
  size_t longest_ = 0;
  std::string text_;
  size_t released_ = 0;
  std::optional<std::string> matched_;
};

}  // namespace ctxpar::tokenizer
