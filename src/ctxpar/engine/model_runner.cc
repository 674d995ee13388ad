#include "ctxpar/engine/model_runner.h"

#include <algorithm>

#include "ctxpar/core/error.h"
#include "ctxpar/core/fault_injection.h"
#include "ctxpar/core/fp8.h"
#include "ctxpar/core/half.h"
#include "ctxpar/core/thread_pool.h"
#include "ctxpar/model/sfa_mode.h"

namespace ctxpar::engine {
namespace {

// Fills a float cache with values uniform in [-1, 1) from xorshift64 streams seeded by (seed,
// chunk), over the pool. Most of the time is the kernel clearing the fresh pages (~2 s per GiB
// per rank on the 2-core VM of issue 16).
void fill_uniform(Tensor& cache, uint64_t seed, ThreadPool& pool) {
  const DType dtype = cache.dtype();
  CTXPAR_CHECK(dtype == DType::kF32 || dtype == DType::kBF16 || dtype == DType::kF16 ||
                   dtype == DType::kF8E4M3,
               "--dummy-context fills float KV caches only; this model has a {} cache {}",
               dtype_name(dtype), cache.describe());
  float* f32 = dtype == DType::kF32 ? static_cast<float*>(cache.raw()) : nullptr;
  uint16_t* half =
      dtype == DType::kBF16 || dtype == DType::kF16 ? static_cast<uint16_t*>(cache.raw()) : nullptr;
  uint8_t* fp8 = dtype == DType::kF8E4M3 ? static_cast<uint8_t*>(cache.raw()) : nullptr;
  pool.parallel_for(cache.numel(), int64_t{1} << 16, [&](int64_t begin, int64_t end, int) {
    uint64_t x = (seed ^ (static_cast<uint64_t>(begin) * 0x9e3779b97f4a7c15ull)) | 1;
    for (int64_t i = begin; i < end; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      const float v = static_cast<float>(x >> 40) * (2.0f / 16777216.0f) - 1.0f;
      if (f32 != nullptr) {
        f32[i] = v;
      } else if (fp8 != nullptr) {
        fp8[i] = fp8_e4m3::from_f32(v);
      } else {
        half[i] = dtype == DType::kBF16 ? bf16::from_f32(v) : f16::from_f32(v);
      }
    }
  });
}

}  // namespace

ModelRunner::ModelRunner(const model::ModelConfig& config, const model::ModelContext& ctx,
                         bool dummy_context)
    : model_(std::make_unique<model::CausalLM>(config, ctx)),
      builder_(model::make_metadata_builder(config, ctx)),
      tables_(int64_t{ctx.options.block_size} * ctx.dcp_size()),
      groups_(&ctx.groups),
      pool_(&ctx.pool),
      world_rank_(ctx.groups.world().rank()),
      dummy_context_(dummy_context) {}

void ModelRunner::allocate_kv_cache(int32_t num_blocks) {
  model_->allocate_kv_cache(num_blocks);
  if (!dummy_context_) return;
  // Every page written: a cache never written maps the kernel's shared zero page, and decode
  // would read it from the CPU's caches instead of DRAM.
  uint64_t seed = 0x6a09e667f3bcc908ull + static_cast<uint64_t>(world_rank_);
  for (Tensor& cache : model_->kv_caches()) fill_uniform(cache, seed++, *pool_);
}

Tensor ModelRunner::execute(const StepPlan& plan, bool all_positions) {
  inject_test_fault(FaultPoint::kDecode, world_rank_, num_steps_++);
  const std::vector<attention::ScheduledRequest> batch = tables_.apply(plan);
  if (batch.empty()) return Tensor::empty({0, 0}, DType::kF32);
  if (!dummy_context_) {
    std::vector<const StepPlan::Entry*> entries;
    for (const StepPlan::Entry& e : plan.entries) entries.push_back(&e);
    return forward(batch, entries, all_positions);
  }

  CTXPAR_CHECK(!all_positions && std::none_of(plan.entries.begin(), plan.entries.end(),
                                              [](const auto& e) { return e.all_logits; }),
               "a dummy-context engine returns no logits for prompt tokens");
  // Only decodes run.
  std::vector<attention::ScheduledRequest> decodes;
  std::vector<const StepPlan::Entry*> entries;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].is_decode()) {
      decodes.push_back(batch[i]);
      entries.push_back(&plan.entries[i]);
    }
  }
  const Tensor ran = decodes.empty() ? Tensor::empty({0, 0}, DType::kF32)
                                     : forward(decodes, entries, /*all_positions=*/false);
  Tensor logits = Tensor::zeros({plan.num_logit_rows(), model_->config().vocab_size}, DType::kF32);
  int64_t row = 0, ran_row = 0;
  size_t next = 0;
  for (const StepPlan::Entry& e : plan.entries) {
    const bool was_run = next < entries.size() && entries[next] == &e;
    next += was_run;
    if (!e.samples) continue;
    if (was_run) logits.select(0, row).copy_from(ran.select(0, ran_row++));
    ++row;
  }
  return logits;
}

Tensor ModelRunner::forward(const std::vector<attention::ScheduledRequest>& batch,
                            const std::vector<const StepPlan::Entry*>& entries,
                            bool all_positions) {
  const attention::AttentionMetadata md = builder_->build(batch);
  Tensor token_ids = Tensor::empty({md.common.num_tokens}, DType::kI32);
  std::vector<int64_t> rows;
  int64_t t = 0;
  for (const StepPlan::Entry* e : entries) {
    for (size_t i = 0; i < e->token_ids.size(); ++i, ++t) {
      token_ids.data<int32_t>()[t] = e->token_ids[i];
      if (all_positions || e->all_logits || (e->samples && i + 1 == e->token_ids.size())) {
        rows.push_back(t);
      }
    }
  }
  Tensor logits_indices = Tensor::empty({static_cast<int64_t>(rows.size())}, DType::kI64);
  std::copy(rows.begin(), rows.end(), logits_indices.data<int64_t>());
  return model_->forward(md, token_ids, logits_indices);
}

}  // namespace ctxpar::engine
