#include "ctxpar/engine/model_runner.h"

#include "ctxpar/core/fault_injection.h"
#include "ctxpar/model/sfa_mode.h"

namespace ctxpar::engine {

ModelRunner::ModelRunner(const model::ModelConfig& config, const model::ModelContext& ctx)
    : model_(std::make_unique<model::CausalLM>(config, ctx)),
      builder_(model::make_metadata_builder(config, ctx)),
      tables_(int64_t{ctx.options.block_size} * ctx.dcp_size()),
      groups_(&ctx.groups),
      world_rank_(ctx.groups.world().rank()) {}

Tensor ModelRunner::execute(const StepPlan& plan, bool all_positions) {
  inject_test_fault(FaultPoint::kDecode, world_rank_, num_steps_++);
  const std::vector<attention::ScheduledRequest> batch = tables_.apply(plan);
  if (batch.empty()) return Tensor::empty({0, 0}, DType::kF32);
  const attention::AttentionMetadata md = builder_->build(batch);
  Tensor token_ids = Tensor::empty({md.common.num_tokens}, DType::kI32);
  std::vector<int64_t> rows;
  int64_t t = 0;
  for (const StepPlan::Entry& e : plan.entries) {
    for (size_t i = 0; i < e.token_ids.size(); ++i, ++t) {
      token_ids.data<int32_t>()[t] = e.token_ids[i];
      if (all_positions || (e.samples && i + 1 == e.token_ids.size())) rows.push_back(t);
    }
  }
  Tensor logits_indices = Tensor::empty({static_cast<int64_t>(rows.size())}, DType::kI64);
  std::copy(rows.begin(), rows.end(), logits_indices.data<int64_t>());
  return model_->forward(md, token_ids, logits_indices);
}

}  // namespace ctxpar::engine
