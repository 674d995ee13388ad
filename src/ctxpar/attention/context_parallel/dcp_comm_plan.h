// How a DCP group exchanges partial attention results (DESIGN.md §3), chosen with vLLM's
// flag --dcp-comm-backend.
#pragma once

#include <string_view>

namespace ctxpar::attention {

enum class DcpCommPlan {
  kAllGatherReduceScatter,  // "ag_rs": all-gather LSEs, rescale locally, reduce-scatter heads
  kAllToAll,                // "a2a": one all-to-all of packed (o, lse), merge N partials
};

// "ag_rs" or "a2a"; anything else is an Error naming the value and the valid ones.
DcpCommPlan parse_dcp_comm_plan(std::string_view name);
std::string_view dcp_comm_plan_name(DcpCommPlan plan);

}  // namespace ctxpar::attention
