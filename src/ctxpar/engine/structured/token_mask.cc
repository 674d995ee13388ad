#include "ctxpar/engine/structured/token_mask.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "ctxpar/core/error.h"

namespace ctxpar::structured {

int64_t TokenMasker::fill(const JsonAutomaton& automaton, const StateSet& state,
                          std::span<const int32_t> stop_tokens, std::span<uint32_t> mask) {
  CTXPAR_CHECK(mask.size() >= mask_words(vocabulary_.size()),
               "a mask of {} words cannot hold {} tokens", mask.size(), vocabulary_.size());
  std::fill(mask.begin(), mask.end(), 0u);
  int64_t allowed = 0;
  const auto allow = [&](int32_t t) {
    if (t < 0 || static_cast<size_t>(t) / 32 >= mask.size() || mask_allows(mask, t)) return;
    mask[static_cast<size_t>(t) / 32] |= 1u << (t % 32);
    ++allowed;
  };
  const bool can_end = automaton.can_end(state);
  if (can_end) {
    for (const int32_t t : stop_tokens) allow(t);
    if (automaton.must_end(state)) return allowed;
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
        if (chars[k] <= *room) allow(ids[k]);
      }
    }
    trie = &vocabulary_.non_plain_trie();
  }
  const auto nodes = trie->nodes();
  const auto ids = trie->token_ids();
  states_.resize(static_cast<size_t>(trie->max_depth()) + 1);
  states_[0] = state;
  // Preorder: when node i (depth d) is reached, states_[d - 1] is its parent's state.
  for (uint32_t i = 1; i < nodes.size();) {
    const ByteTrie::Node& n = nodes[i];
    if (!automaton.advance(states_[n.depth - 1u], n.byte, states_[n.depth])) {
      i = n.subtree_end;
      continue;
    }
    for (uint32_t k = n.tokens_begin; k < n.tokens_end; ++k) allow(ids[k]);
    ++i;
  }
  return allowed;
}

}  // namespace ctxpar::structured
