#include "ctxpar/server/output_text.h"

namespace ctxpar::server {

OutputText::OutputText(const tokenizer::Tokenizer& tokenizer,
                       std::span<const int32_t> prompt_token_ids, const StopStrings& stop,
                       bool skip_special_tokens)
    : detokenizer_(tokenizer, prompt_token_ids, skip_special_tokens),
      min_tokens_(stop.min_tokens),
      include_stop_(stop.include_in_output) {
  if (!stop.strings.empty()) matcher_.emplace(stop.strings, stop.include_in_output);
}

void OutputText::emit(const std::string& text, Delta& delta) {
  if (!matcher_ || num_tokens_ <= min_tokens_) {
    delta.text += text;
    return;
  }
  delta.text += matcher_->push(text);
  if (matcher_->matched()) stop_ = matcher_->matched();
}

OutputText::Delta OutputText::add(std::span<const int32_t> token_ids, bool finished,
                                  bool stop_terminated) {
  Delta delta;
  delta.num_tokens = num_tokens_;
  if (stop_) return delta;  // the output ended at its stop string
  for (size_t k = 0; k < token_ids.size(); ++k) {
    ++num_tokens_;
    if (stop_terminated && k + 1 == token_ids.size() && !include_stop_) break;  // not shown
    emit(detokenizer_.add(token_ids[k]), delta);
    if (stop_) break;  // the token that completed the stop string is the last that counts
  }
  if (finished && !stop_) {
    emit(detokenizer_.finish(), delta);
    if (!stop_ && matcher_) delta.text += matcher_->flush();
  }
  delta.stop_string = stop_;
  delta.num_tokens = num_tokens_;
  text_ += delta.text;
  return delta;
}

}  // namespace ctxpar::server
