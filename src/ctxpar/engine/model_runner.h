// ModelRunner: one rank's model and the per-step work around it (DESIGN.md §6). Every rank
// of the TP group builds one; each step all of them execute the same StepPlan, and each keeps
// the requests' block tables the plans build up (RequestBlockTables).
#pragma once

#include <memory>

#include "ctxpar/attention/attention_metadata.h"
#include "ctxpar/comm/parallel_groups.h"
#include "ctxpar/engine/request_block_tables.h"
#include "ctxpar/engine/step_plan.h"
#include "ctxpar/model/causal_lm.h"

namespace ctxpar::engine {

class ModelRunner {
 public:
  // Loads this rank's weights; the caller then plans the KV cache and calls allocate_kv_cache.
  // dummy_context: EngineConfig::dummy_context (prompt tokens are not computed).
  ModelRunner(const model::ModelConfig& config, const model::ModelContext& ctx,
              bool dummy_context = false);

  model::CausalLM& model() { return *model_; }
  // With dummy_context, also fills every cache with random values in [-1, 1): the KV that
  // prompt tokens are taken to have. Throws Error for a cache that is not f32, bf16 or f16.
  void allocate_kv_cache(int32_t num_blocks);

  // Applies the plan to the block tables and runs the step; returns logits
  // [plan.num_logit_rows(), vocab] f32 (same on every rank), rows in entry order: every new
  // token's for an all_logits entry, the last one's for another sampling entry. With
  // all_positions, the rows are every new token of every entry (verify/tests). A plan without
  // entries only updates the tables. With dummy_context, only decode entries (one new token
  // after a context) run the model; the others' rows are zeros, and all_positions or an
  // all_logits entry is an Error.
  Tensor execute(const StepPlan& plan, bool all_positions = false);

  const RequestBlockTables& block_tables() const { return tables_; }
  // This rank's thread pool (idle between steps).
  ThreadPool& pool() { return *pool_; }

  // This rank's time in TP and DCP collectives so far (ParallelGroups::collective_seconds).
  double collective_seconds() const { return groups_->collective_seconds(); }

 private:
  // Runs the model for the requests of batch, entries[i] holding batch[i]'s tokens.
  Tensor forward(const std::vector<attention::ScheduledRequest>& batch,
                 const std::vector<const StepPlan::Entry*>& entries, bool all_positions);

  std::unique_ptr<model::CausalLM> model_;
  std::unique_ptr<attention::AttentionMetadataBuilder> builder_;
  RequestBlockTables tables_;
  const ParallelGroups* groups_;
  ThreadPool* pool_;
  int world_rank_;
  bool dummy_context_;
  int64_t num_steps_ = 0;  // execute() calls so far (test fault injection counts them)
};

}  // namespace ctxpar::engine
