// JsonMatcher: one generation's position in a grammar, advanced token by token (the bytes of
// each token), with rollback of whole tokens.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "ctxpar/engine/structured/json_automaton.h"

namespace ctxpar::structured {

class JsonMatcher {
 public:
  explicit JsonMatcher(std::shared_ptr<const JsonAutomaton> automaton);

  // Takes all of `bytes` (one token) or, when some byte is refused, none of them: returns false
  // and the state is unchanged. Empty bytes are refused (a token must make progress).
  bool accept(std::string_view bytes);
  // Undoes the last n accepted tokens (n <= num_accepted()).
  void rollback(size_t n);
  void reset();

  size_t num_accepted() const { return history_.size() - 1; }
  const StateSet& state() const { return history_.back(); }
  bool can_end() const { return automaton_->can_end(state()); }
  bool must_end() const { return automaton_->must_end(state()); }
  const JsonAutomaton& automaton() const { return *automaton_; }

 private:
  std::shared_ptr<const JsonAutomaton> automaton_;
  std::vector<StateSet> history_;  // [num_accepted() + 1]: the state before each token, then now
  StateSet scratch_[2];
};

}  // namespace ctxpar::structured
