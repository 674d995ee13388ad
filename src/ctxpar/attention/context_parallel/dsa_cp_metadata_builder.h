// The DSA-CP builder mixin (DESIGN.md §4 "DSA-CP"): wraps a builder (the normal one, or the
// DCP one when N > 1) so the metadata it builds also carries this TP rank's token slice and
// the metadata of that slice alone (DsaCpMetadata). The wrapped builder stays the source of
// truth: the step's metadata is exactly what it builds, and the slice's metadata is what it
// builds for the requests cut at the slice's edges.
#pragma once

#include <span>
#include <utility>
#include <vector>

#include "ctxpar/attention/attention_metadata.h"

namespace ctxpar::attention {

// The requests' tokens in [shard.first, shard.last), as requests of their own: a request
// cut at the front keeps its block table and counts the cut tokens as computed (they are in
// the cache by the time the slice attends: the KV of every slice is written first).
std::vector<ScheduledRequest> slice_requests(std::span<const ScheduledRequest> requests,
                                             const TokenShard& shard);

template <class Builder>
class DsaCpBuilderMixin : public Builder {
 public:
  // tp_rank in [0, tp_size); args: the wrapped builder's constructor arguments.
  template <class... Args>
  DsaCpBuilderMixin(int tp_rank, int tp_size, const Args&... args)
      : Builder(args...), slice_builder_(args...), tp_rank_(tp_rank), tp_size_(tp_size) {}

 protected:
  void build_extra(std::span<const ScheduledRequest> requests,
                   AttentionMetadata& md) const override {
    Builder::build_extra(requests, md);
    DsaCpMetadata dsa_cp;
    dsa_cp.shard = make_token_shard(md.common.num_tokens, tp_rank_, tp_size_);
    dsa_cp.local = std::make_shared<const AttentionMetadata>(
        slice_builder_.build(slice_requests(requests, dsa_cp.shard)));
    md.dsa_cp = std::move(dsa_cp);
  }

 private:
  Builder slice_builder_;  // the same builder without the mixin: slices carry no slice
  int tp_rank_;
  int tp_size_;
};

}  // namespace ctxpar::attention
