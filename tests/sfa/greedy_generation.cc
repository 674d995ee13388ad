#include "greedy_generation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/comm/parallel_groups.h"
#include "ctxpar/core/error.h"
#include "ctxpar/kv/block_pool.h"
#include "ctxpar/kv/block_table.h"
#include "ctxpar/model/causal_lm.h"
#include "ctxpar/model/dummy_weights.h"
#include "ctxpar/model/sfa_mode.h"

namespace ctxpar::sfa_test {

using model::CausalLM;
using model::DummyWeights;
using model::ModelContext;
using model::ModelOptions;

std::string RunSpec::describe() const {
  return fmt::format(
      "T={} N={} B={} I={} {} {}{}{}{}{}{}", tp, dcp, block_size, interleave,
      attention::dcp_comm_plan_name(plan), attention::sfa_indexer_mode_name(mode),
      dsa_cp ? " dsa_cp" : "", sequence_parallel ? " flashcomm1" : "",
      o_proj_quant == model::OProjQuant::kInt8   ? " int8-o_proj"
      : o_proj_quant == model::OProjQuant::kBf16 ? " bf16-o_proj"
                                                 : "",
      weight_dtype == DType::kBF16 ? " bf16" : "",
      kv_cache_dtype == DType::kF32 ? "" : fmt::format(" {}-kv", dtype_name(kv_cache_dtype)));
}

PromptSet make_prompts(std::mt19937& rng) {
  PromptSet set;
  for (int64_t len : {int64_t{37} + static_cast<int64_t>(rng() % 20), int64_t{5},
                      int64_t{20} + static_cast<int64_t>(rng() % 30)}) {
    set.prompts.emplace_back();
    for (int64_t i = 0; i < len; ++i)
      set.prompts.back().push_back(static_cast<int32_t>(rng() % 256));
    set.chunks.emplace_back();
    for (int64_t left = len; left > 0;) {
      const int64_t n = 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(left));
      set.chunks.back().push_back(n);
      left -= n;
    }
  }
  return set;
}

// A tiny continuous-batching loop: every step schedules decodes first, then the next chunk of
// each unfinished prompt; the rows at the end of a request's known tokens are sampled
// greedily (argmax, ties to the lower id).
Generation generate_on(Communicator& world, const model::ModelConfig& config, const RunSpec& spec,
                       const PromptSet& set, const ForcedTokens* forced) {
  CTXPAR_CHECK(world.size() == spec.tp, "{} needs {} ranks, the communicator has {}",
               spec.describe(), spec.tp, world.size());
  if (forced != nullptr) {
    CTXPAR_CHECK(forced->size() == set.prompts.size(), "{} forced continuations for {} prompts",
                 forced->size(), set.prompts.size());
    for (const auto& f : *forced)
      CTXPAR_CHECK(f.size() == kDecodeSteps, "a forced continuation of {} tokens, want {}",
                   f.size(), kDecodeSteps);
  }
  ModelOptions options;
  options.block_size = spec.block_size;
  options.interleave = spec.interleave;
  options.comm_plan = spec.plan;
  options.sfa_indexer_mode = spec.mode;
  options.max_context_chunk = 48;  // several gather groups per prefill step
  options.enable_dsa_cp = spec.dsa_cp;
  options.sequence_parallel = spec.sequence_parallel;
  options.o_proj_quant = spec.o_proj_quant;
  options.weight_dtype = spec.weight_dtype;
  options.kv_cache_dtype = spec.kv_cache_dtype;
  const DummyWeights weights(1234);
  bool finite = true;
  double spread = INFINITY;
  ParallelGroups groups(world, spec.tp, spec.dcp);
  ThreadPool pool(1);
  const ModelContext ctx{weights, groups, options, pool};
  CausalLM lm(config, ctx);
  const int32_t num_blocks = 256;
  lm.allocate_kv_cache(num_blocks);
  const kv::DcpLayout layout(spec.dcp, spec.block_size, spec.interleave);
  const std::unique_ptr<attention::AttentionMetadataBuilder> builder =
      model::make_metadata_builder(config, ctx);
  kv::BlockPool blocks(num_blocks);
  std::vector<kv::BlockTable> tables;
  std::vector<std::vector<int32_t>> known = set.prompts;  // prompt + generated so far
  std::vector<std::vector<std::vector<float>>> rows_seen(set.prompts.size());
  std::vector<int64_t> computed(set.prompts.size(), 0);
  std::vector<size_t> next_chunk(set.prompts.size(), 0);
  for (size_t i = 0; i < set.prompts.size(); ++i) tables.emplace_back(blocks, layout);
  for (;;) {
    std::vector<size_t> order;  // decodes first
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t i = 0; i < set.prompts.size(); ++i) {
        const bool decoding = computed[i] >= static_cast<int64_t>(set.prompts[i].size());
        const bool done = known[i].size() == set.prompts[i].size() + kDecodeSteps;
        if (!done && decoding == (pass == 0)) order.push_back(i);
      }
    }
    if (order.empty()) break;
    std::vector<attention::ScheduledRequest> batch;
    std::vector<int32_t> ids;
    std::vector<int64_t> rows;
    std::vector<size_t> sampled;
    for (size_t i : order) {
      const int64_t n = computed[i] < static_cast<int64_t>(set.prompts[i].size())
                            ? set.chunks[i][next_chunk[i]++]
                            : 1;
      CTXPAR_CHECK(tables[i].grow(computed[i] + n), "test pool too small");
      attention::ScheduledRequest r;
      r.num_computed = computed[i];
      r.num_scheduled = n;
      r.block_table.assign(tables[i].ids().begin(), tables[i].ids().end());
      batch.push_back(std::move(r));
      for (int64_t j = 0; j < n; ++j) ids.push_back(known[i][static_cast<size_t>(computed[i] + j)]);
      computed[i] += n;
      if (computed[i] == static_cast<int64_t>(known[i].size())) {
        rows.push_back(static_cast<int64_t>(ids.size()) - 1);
        sampled.push_back(i);
      }
    }
    const auto md = builder->build(batch);
    Tensor token_ids = Tensor::empty({static_cast<int64_t>(ids.size())}, DType::kI32);
    std::copy(ids.begin(), ids.end(), token_ids.data<int32_t>());
    Tensor logits_rows = Tensor::empty({static_cast<int64_t>(rows.size())}, DType::kI64);
    std::copy(rows.begin(), rows.end(), logits_rows.data<int64_t>());
    const Tensor logits = lm.forward(md, token_ids, logits_rows);
    for (size_t r = 0; r < sampled.size(); ++r) {
      const float* l = logits.data<float>() + static_cast<int64_t>(r) * logits.size(1);
      int32_t best = 0;
      float lo = l[0], hi = l[0];
      for (int32_t v = 0; v < logits.size(1); ++v) {
        finite = finite && std::isfinite(l[v]);
        if (l[v] > l[best]) best = v;
        lo = std::min(lo, l[v]);
        hi = std::max(hi, l[v]);
      }
      const size_t i = sampled[r];
      known[i].push_back(forced != nullptr ? (*forced)[i][rows_seen[i].size()] : best);
      rows_seen[i].emplace_back(l, l + logits.size(1));
      spread = std::min<double>(spread, hi - lo);
    }
  }
  Generation result;
  result.finite = finite;
  result.logit_spread = spread;
  result.logits = std::move(rows_seen);
  for (size_t i = 0; i < set.prompts.size(); ++i) {
    result.tokens.emplace_back(known[i].begin() + static_cast<int64_t>(set.prompts[i].size()),
                               known[i].end());
  }
  return result;
}

Generation generate_inprocess(const model::ModelConfig& config, const RunSpec& spec,
                              const PromptSet& set, const ForcedTokens* forced) {
  Generation result;
  run_inprocess_ranks(spec.tp, [&](Communicator& world) {
    Generation mine = generate_on(world, config, spec, set, forced);
    if (world.rank() == 0) result = std::move(mine);
  });
  return result;
}

}  // namespace ctxpar::sfa_test
