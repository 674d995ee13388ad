#include "ctxpar/attention/sfa_indexer_mode.h"

#include "ctxpar/core/error.h"

namespace ctxpar::attention {

SfaIndexerMode parse_sfa_indexer_mode(std::string_view name) {
  if (name == "replicated") return SfaIndexerMode::kReplicated;
  if (name == "sharded") return SfaIndexerMode::kSharded;
  CTXPAR_FAIL(
      "sfa_indexer_mode '{}' is not valid; use replicated (every rank keeps every index key) "
      "or sharded (each rank keeps its own keys and the group merges per-rank top-k)",
      name);
}

std::string_view sfa_indexer_mode_name(SfaIndexerMode mode) {
  return mode == SfaIndexerMode::kSharded ? "sharded" : "replicated";
}

}  // namespace ctxpar::attention
