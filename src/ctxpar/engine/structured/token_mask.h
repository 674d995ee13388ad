// Token masks: which tokens of a vocabulary a matcher state allows next.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ctxpar/engine/structured/json_automaton.h"
#include "ctxpar/engine/structured/token_vocabulary.h"

namespace ctxpar::structured {

// Number of 32-bit words of a mask over `vocab` ids.
inline size_t mask_words(int64_t vocab) {
  return static_cast<size_t>((vocab + 31) / 32);
}
inline bool mask_allows(std::span<const uint32_t> mask, int32_t token) {
  return (mask[static_cast<size_t>(token) / 32] >> (token % 32)) & 1u;
}

class TokenMasker {
 public:
  // `vocabulary` must outlive the masker. One masker per thread (it keeps scratch states).
  explicit TokenMasker(const TokenVocabulary& vocabulary) : vocabulary_(vocabulary) {}

  // mask: [mask_words(n)] bits for ids [0, n), n >= the vocabulary's size (ids beyond it stay
  // refused). Sets exactly: every token whose bytes the automaton takes from `state` (all of
  // them, leaving a state that can still become a whole document), and the `stop_tokens` when
  // the text so far is a whole document. When a whole document cannot be continued, only the
  // stop tokens. Returns the number of tokens allowed.
  int64_t fill(const JsonAutomaton& automaton, const StateSet& state,
               std::span<const int32_t> stop_tokens, std::span<uint32_t> mask);

 private:
  // Walks trie nodes [begin, end) of a preorder range whose first node's parent state is
  // states_[depth - 1], allowing the tokens the automaton takes.
  void walk(const JsonAutomaton& automaton, const ByteTrie& trie, uint32_t begin, uint32_t end,
            std::span<uint32_t> mask, int64_t& allowed);
  // The same over the DFA of a regex (JsonAutomaton::regex_at) from `state`.
  void walk_regex(const JsonAutomaton& automaton, const StateSet& state,
                  const JsonAutomaton::RegexAt& at, std::span<uint32_t> mask, int64_t& allowed);

  const TokenVocabulary& vocabulary_;
  std::vector<StateSet> states_;     // [max_depth + 1]: the state after each byte of the walk
  std::vector<int32_t> dfa_states_;  // [max_depth + 1], walk_regex's
  std::vector<uint8_t> path_;        // [max_depth], the bytes from the root to the node
};

}  // namespace ctxpar::structured
