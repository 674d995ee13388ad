#include "ctxpar/server/output_text.h"

namespace ctxpar::server {

OutputText::OutputText(const tokenizer::Tokenizer& tokenizer,
                       std::span<const int32_t> prompt_token_ids, const StopStrings& stop,
                       bool skip_special_tokens)
    : detokenizer_(tokenizer, prompt_token_ids, skip_special_tokens), min_tokens_(stop.min_tokens) {
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

OutputText::Delta OutputText::add(std::span<const int32_t> token_ids, bool finished) {
  Delta delta;
  delta.num_tokens = num_tokens_;
  if (stop_) return delta;  // the output ended at its stop string
  for (const int32_t id : token_ids) {
    ++num_tokens_;
    emit(detokenizer_.add(id), delta);
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
