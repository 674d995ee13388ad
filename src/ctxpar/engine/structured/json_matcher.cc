#include "ctxpar/engine/structured/json_matcher.h"

#include "ctxpar/core/error.h"

namespace ctxpar::structured {

JsonMatcher::JsonMatcher(std::shared_ptr<const JsonAutomaton> automaton)
    : automaton_(std::move(automaton)) {
  CTXPAR_CHECK(automaton_ != nullptr, "a JsonMatcher needs an automaton");
  reset();
}

bool JsonMatcher::accept(std::string_view bytes) {
  if (bytes.empty()) return false;
  const StateSet* from = &history_.back();
  int which = 0;
  for (const char c : bytes) {
    StateSet& to = scratch_[which];
    if (!automaton_->advance(*from, static_cast<uint8_t>(c), to)) return false;
    from = &to;
    which ^= 1;
  }
  history_.push_back(*from);
  return true;
}

void JsonMatcher::rollback(size_t n) {
  CTXPAR_CHECK(n <= num_accepted(), "rollback of {} tokens, but only {} were accepted", n,
               num_accepted());
  history_.resize(history_.size() - n);
}

void JsonMatcher::reset() {
  history_.clear();
  history_.push_back(automaton_->initial());
}

}  // namespace ctxpar::structured
