#include "ctxpar/tokenizer/stop_strings.h"

#include <algorithm>

#include "ctxpar/core/error.h"

namespace ctxpar::tokenizer {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stop, bool include)
    : stop_(std::move(stop)), include_(include) {
  for (const std::string& s : stop_) {
    CTXPAR_CHECK_INPUT(!s.empty(), "a stop string must not be empty");
    longest_ = std::max(longest_, s.size());
  }
}

std::string StopStringMatcher::push(std::string_view piece) {
  if (matched_ || piece.empty()) return std::string();
  const size_t old_size = text_.size();
  text_.append(piece);
  for (const std::string& s : stop_) {
    // Only where the stop string would end inside the new text.
    const size_t from = old_size + 1 > s.size() ? old_size + 1 - s.size() : 0;
    const size_t at = text_.find(s, from);
    if (at == std::string::npos) continue;
    matched_ = s;
    text_.resize(include_ ? at + s.size() : at);
    std::string out = text_.substr(released_);
    released_ = text_.size();
    return out;
  }
  // Hold back the longest end of the text that is the start of some stop string. Stop
  // strings are valid UTF-8, so such an end starts at a character boundary.
  size_t hold = 0;
  if (!include_ && longest_ > 1) {
    const size_t open = text_.size() - released_;
    for (size_t k = std::min(open, longest_ - 1); k > 0 && hold == 0; --k) {
      const std::string_view tail = std::string_view(text_).substr(text_.size() - k);
      for (const std::string& s : stop_) {
        if (s.size() > k && std::string_view(s).substr(0, k) == tail) {
          hold = k;
          break;
        }
      }
    }
  }
  const size_t end = text_.size() - hold;
  std::string out = text_.substr(released_, end - released_);
  released_ = end;
  return out;
}

std::string StopStringMatcher::flush() {
  std::string out = text_.substr(released_);
  released_ = text_.size();
  return out;
}

}  // namespace ctxpar::tokenizer
