#include "ctxpar/engine/structured/token_mask.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "ctxpar/core/error.h"

namespace ctxpar::structured {

namespace {

void allow_token(std::span<uint32_t> mask, int32_t t, int64_t& allowed) {
  if (t < 0 || static_cast<size_t>(t) / 32 >= mask.size() || mask_allows(mask, t)) return;
  mask[static_cast<size_t>(t) / 32] |= 1u << (t % 32);
  ++allowed;
}

}  // namespace

void TokenMasker::walk(const JsonAutomaton& automaton, const ByteTrie& trie, uint32_t begin,
                       uint32_t end, std::span<uint32_t> mask, int64_t& allowed) {
  const auto nodes = trie.nodes();
  const auto ids = trie.token_ids();
  // Preorder: when node i (depth d) is reached, states_[d - 1] is its parent's state.
  for (uint32_t i = begin; i < end;) {
    const ByteTrie::Node& n = nodes[i];
    if (!automaton.advance(states_[n.depth - 1u], n.byte, states_[n.depth])) {
      i = n.subtree_end;
      continue;
    }
    for (uint32_t k = n.tokens_begin; k < n.tokens_end; ++k) allow_token(mask, ids[k], allowed);
    ++i;
  }
}

void TokenMasker::walk_regex(const JsonAutomaton& automaton, const StateSet& state,
                             const JsonAutomaton::RegexAt& at, std::span<uint32_t> mask,
                             int64_t& allowed) {
  const ByteTrie& trie = vocabulary_.trie();
  const auto nodes = trie.nodes();
  const auto ids = trie.token_ids();
  const ByteDfa& dfa = *at.dfa;
  dfa_states_.resize(static_cast<size_t>(trie.max_depth()) + 1);
  path_.resize(static_cast<size_t>(trie.max_depth()) + 1);
  dfa_states_[0] = at.state;
  for (uint32_t i = 1; i < nodes.size();) {
    const ByteTrie::Node& n = nodes[i];
    path_[n.depth - 1u] = n.byte;
    const int32_t from = dfa_states_[n.depth - 1u];
    const int32_t to = dfa.next(from, n.byte);
    if (to == ByteDfa::kNone) {
      if (at.in_string && n.byte == '"' && dfa.accepting(from)) {
        // The string closes inside these tokens: the whole automaton reads on from the state
        // after the bytes before the quote (few tokens: replayed from the start).
        states_[0] = state;
        for (uint16_t d = 1; d < n.depth; ++d) {
          CTXPAR_CHECK(automaton.advance(states_[d - 1u], path_[d - 1u], states_[d]),
                       "the automaton refused a byte its regex took");
        }
        walk(automaton, trie, i, n.subtree_end, mask, allowed);
      }
      i = n.subtree_end;
      continue;
    }
    dfa_states_[n.depth] = to;
    for (uint32_t k = n.tokens_begin; k < n.tokens_end; ++k) allow_token(mask, ids[k], allowed);
    ++i;
  }
}

int64_t TokenMasker::fill(const JsonAutomaton& automaton, const StateSet& state,
                          std::span<const int32_t> stop_tokens, std::span<uint32_t> mask) {
  CTXPAR_CHECK(mask.size() >= mask_words(vocabulary_.size()),
               "a mask of {} words cannot hold {} tokens", mask.size(), vocabulary_.size());
  std::fill(mask.begin(), mask.end(), 0u);
  int64_t allowed = 0;
  const bool can_end = automaton.can_end(state);
  if (can_end) {
    for (const int32_t t : stop_tokens) allow_token(mask, t, allowed);
    if (automaton.must_end(state)) return allowed;
  }
  states_.resize(static_cast<size_t>(vocabulary_.trie().max_depth()) + 1);
  if (const auto at = automaton.regex_at(state)) {
    walk_regex(automaton, state, *at, mask, allowed);
    return allowed;
  }
  // Fast path: one way of reading, inside a string between characters: the plain tokens that
  // fit its room without a walk, then the walk over the other tokens only.
  const ByteTrie* trie = &vocabulary_.trie();
  if (const auto room = automaton.string_room(state)) {
    if (*room == std::numeric_limits<int64_t>::max()) {
      const auto plain = vocabulary_.plain_string_tokens();
      for (size_t w = 0; w < plain.size(); ++w) {
        allowed += std::popcount(plain[w] & ~mask[w]);
        mask[w] |= plain[w];
      }
    } else {
      const auto ids = vocabulary_.plain_ids();
      const auto chars = vocabulary_.plain_chars();
      for (size_t k = 0; k < ids.size(); ++k) {
        if (chars[k] <= *room) allow_token(mask, ids[k], allowed);
      }
    }
    trie = &vocabulary_.non_plain_trie();
  }
  states_[0] = state;
  walk(automaton, *trie, 1, static_cast<uint32_t>(trie->nodes().size()), mask, allowed);
  return allowed;
}

}  // namespace ctxpar::structured
