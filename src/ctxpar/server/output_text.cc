#include "ctxpar/server/output_text.h"

#include <algorithm>

#include "ctxpar/server/utf8.h"

namespace ctxpar::server {

OutputText::OutputText(const tokenizer::Tokenizer& tokenizer, StopStrings stop,
                       bool skip_special_tokens)
    : tokenizer_(tokenizer), stops_(std::move(stop)), skip_special_tokens_(skip_special_tokens) {
  for (const std::string& s : stops_.strings) {
    max_stop_length_ = std::max(max_stop_length_, utf8_length(s));
  }
}

OutputText::Delta OutputText::add(std::span<const int32_t> token_ids, bool finished) {
  Delta delta;
  if (stop_) {
    delta.num_tokens = counted_tokens_;
    return delta;
  }
  for (const int32_t id : token_ids) {
    ids_.push_back(id);
    // Decode the new token in the context of the previous ones (a decoder may join them, e.g.
    // drop a leading space), keeping only the bytes it adds.
    const std::span<const int32_t> all(ids_);
    const std::string with = tokenizer_.decode(all.subspan(prefix_offset_), skip_special_tokens_);
    const std::string without = tokenizer_.decode(
        all.subspan(prefix_offset_, read_offset_ - prefix_offset_), skip_special_tokens_);
    raw_ += with.size() >= without.size() ? with.substr(without.size()) : with;
    prefix_offset_ = read_offset_;
    read_offset_ = ids_.size();
    const size_t before = text_.size() + candidate_.size();
    raw_.erase(0, append_valid_utf8(raw_, false, candidate_));
    if (stops_.strings.empty() || static_cast<int64_t>(ids_.size()) <= stops_.min_tokens) continue;
    // Only text this token added can complete a stop string: look from where one could begin.
    // (Held back text is never emitted, but with include_stop_str_in_output nothing is held
    // back, so a match may begin in text already emitted.)
    for (const std::string& s : stops_.strings) {
      const size_t from = before >= s.size() ? before - s.size() + 1 : 0;  // in text_ + candidate_
      const size_t start = std::min(from, text_.size());  // where the haystack begins
      const std::string haystack = text_.substr(start) + candidate_;
      const size_t found = haystack.find(s, from - start);
      if (found == std::string::npos) continue;
      const size_t at = start + found;
      // Held-back text covers every match completed by new text (the cut never falls in
      // emitted text); the max only keeps that an invariant.
      const size_t cut = std::max(stops_.include_in_output ? at + s.size() : at, text_.size());
      candidate_.resize(cut - text_.size());
      stop_ = s;
      break;
    }
    if (stop_) {
      counted_tokens_ = static_cast<int64_t>(ids_.size());
      delta.text = std::move(candidate_);
      candidate_.clear();
      text_ += delta.text;
      delta.stop_string = stop_;
      delta.num_tokens = counted_tokens_;
      return delta;
    }
  }
  counted_tokens_ = static_cast<int64_t>(ids_.size());
  if (finished) {
    raw_.erase(0, append_valid_utf8(raw_, true, candidate_));
    delta.text = std::move(candidate_);
    candidate_.clear();
  } else {
    // Hold back what could still begin a stop string.
    const size_t hold =
        stops_.include_in_output || max_stop_length_ == 0
            ? 0
            : candidate_.size() - utf8_offset_of_last(candidate_, max_stop_length_ - 1);
    delta.text = candidate_.substr(0, candidate_.size() - hold);
    candidate_.erase(0, delta.text.size());
  }
  text_ += delta.text;
  delta.num_tokens = counted_tokens_;
  return delta;
}

}  // namespace ctxpar::server
