// The DCP builder mixin: wraps a normal builder so the metadata it builds is this rank's view
// of a sharded KV cache (local slots, local key counts) and carries the DCP-only facts.
// The normal builder stays the source of truth for classification and common fields; the
// mixin only changes which layout and rank they are computed for.
#pragma once

#include "ctxpar/attention/attention_metadata.h"

namespace ctxpar::attention {

template <class Builder>
class DcpBuilderMixin : public Builder {
 public:
  // layout.dcp_size() is N; dcp_rank in [0, N).
  DcpBuilderMixin(const kv::DcpLayout& layout, int dcp_rank) : Builder(layout, dcp_rank) {}

 protected:
  void build_extra(std::span<const ScheduledRequest> requests,
                   AttentionMetadata& md) const override {
    Builder::build_extra(requests, md);
    DcpMetadata dcp;
    dcp.dcp_rank = this->rank();
    dcp.dcp_size = this->layout().dcp_size();
    dcp.context_len_matrix = this->layout().local_len_matrix(md.common.num_computed);
    md.dcp = std::move(dcp);
  }
};

using DcpMetadataBuilder = DcpBuilderMixin<AttentionMetadataBuilder>;

}  // namespace ctxpar::attention
