// How a DCP group runs the sparse-attention (SFA) Lightning Indexer (DESIGN.md §4), chosen
// with --additional-config '{"sfa_indexer_mode": "..."}'.
#pragma once

#include <string_view>

namespace ctxpar::attention {

enum class SfaIndexerMode {
  // Every rank stores and scores every token's index key: no communication for the
  // selection, indexer memory grows with N (the seed's design).
  kReplicated,
  // Each rank stores and scores only the tokens it owns under the DCP layout, and the group
  // exchanges the per-rank top-k (score, position) lists: indexer memory divided by N.
  kSharded,
};

// "replicated" or "sharded"; anything else is an Error naming the value and the valid ones.
SfaIndexerMode parse_sfa_indexer_mode(std::string_view name);
std::string_view sfa_indexer_mode_name(SfaIndexerMode mode);

}  // namespace ctxpar::attention
