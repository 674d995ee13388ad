#include "ctxpar/attention/context_parallel/dsa_cp_metadata_builder.h"

#include <algorithm>

namespace ctxpar::attention {

std::vector<ScheduledRequest> slice_requests(std::span<const ScheduledRequest> requests,
                                             const TokenShard& shard) {
  std::vector<ScheduledRequest> out;
  int64_t start = 0;  // the request's first token in the step
  for (const ScheduledRequest& r : requests) {
    const int64_t end = start + r.num_scheduled;
    const int64_t lo = std::max(start, shard.first), hi = std::min(end, shard.last);
    if (lo < hi) {
      ScheduledRequest cut;
      cut.num_computed = r.num_computed + (lo - start);
      cut.num_scheduled = hi - lo;
      cut.block_table = r.block_table;
      out.push_back(std::move(cut));
    }
    start = end;
  }
  return out;
}

}  // namespace ctxpar::attention
