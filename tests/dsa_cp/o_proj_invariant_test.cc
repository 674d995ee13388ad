// The o_proj invariant of DSA-CP (DESIGN.md §4): the TP-sharded o_proj weight is the only
// persistent copy. builtin:tiny-deepseek-v32 runs prefill, mixed, decode-only and prefill
// steps under DSA-CP (N = 1 and N = T, T in {2, 4}, f32 and int8 o_proj) and after every
// step, on every rank:
//  - every layer's persistent o_proj tensors (weight; int8: scale, smoothing) sit at the same
//    addresses with the same bytes, and the TP shard alias is active again;
//  - the one FullWeightWorkspace of the rank was allocated once, at the first prefill, with
//    room for one layer's full o_proj — not one per layer — and never grew after that; each
//    prefill or mixed step gathered (T - 1) / T of every layer's full weight into it, a
//    decode-only step nothing;
//  - the process's live tensor bytes are exactly those after load, plus the workspaces, plus
//    the layers' last selections (the only other state a step leaves): no second copy.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/comm/parallel_groups.h"
#include "ctxpar/kv/block_pool.h"
#include "ctxpar/kv/block_table.h"
#include "ctxpar/model/causal_lm.h"
#include "ctxpar/model/dummy_weights.h"
#include "ctxpar/model/layers/sfa_attention_layer.h"
#include "ctxpar/model/sfa_mode.h"
#include "support/seeded_rng.h"

namespace ctxpar::model {
namespace {

struct Snapshot {
  const void* address;
  Tensor bytes;
};

const OutputProjection& o_proj_of(CausalLM& lm, int64_t layer) {
  return dynamic_cast<MlaAttentionLayer&>(lm.layer(layer).attention()).o_proj();
}

void run_invariant(int tp, int dcp, OProjQuant quant, uint32_t seed) {
  SCOPED_TRACE(fmt::format("T={} N={} {}", tp, dcp, quant == OProjQuant::kInt8 ? "int8" : "f32"));
  const ModelConfig config = resolve_model_config("builtin:tiny-deepseek-v32");
  ModelOptions options;
  options.enable_dsa_cp = true;
  options.o_proj_quant = quant;
  options.block_size = 8;
  const DummyWeights weights(seed);
  const int64_t hidden = config.hidden_size,
                in = config.num_attention_heads * config.mla.v_head_dim;
  // One layer's full o_proj: the weight, and for int8 its smoothing (gathered: input-sharded)
  // and scale (copied: the same on every rank).
  const bool int8 = quant == OProjQuant::kInt8;
  const int64_t gathered_per_layer = hidden * in * (int8 ? 1 : 4) + (int8 ? in * 4 : 0);
  const int64_t full_bytes = gathered_per_layer + (int8 ? hidden * 4 : 0);
  std::mt19937 rng(seed);
  // Steps: (request, new tokens); requests 0, 1 prefill, 2 joins in a mixed step.
  const int64_t len0 = 2 * tp + 1 + static_cast<int64_t>(rng() % 9);  // not a multiple of T
  const int64_t len1 = 3 + static_cast<int64_t>(rng() % 5),
                len2 = 5 + static_cast<int64_t>(rng() % 7);
  const std::vector<std::vector<std::pair<int, int64_t>>> steps = {
      {{0, len0}, {1, len1}}, {{0, 1}, {1, 1}, {2, len2}}, {{0, 1}, {1, 1}, {2, 1}}, {{2, 9}}};
  const std::vector<bool> gathers = {true, true, false, true};
  std::vector<std::vector<int32_t>> step_ids;  // the same on every rank
  for (const auto& step : steps) {
    step_ids.emplace_back();
    for (const auto& item : step) {
      for (int64_t j = 0; j < item.second; ++j) {
        step_ids.back().push_back(static_cast<int32_t>(rng() % 256));
      }
    }
  }

  int64_t baseline = 0;
  run_inprocess_ranks(tp, [&](Communicator& world) {
    ParallelGroups groups(world, tp, dcp);
    ThreadPool pool(1);
    const ModelContext ctx{weights, groups, options, pool};
    CausalLM lm(config, ctx);
    lm.allocate_kv_cache(64);
    const auto builder = make_metadata_builder(config, ctx);
    const kv::DcpLayout layout(dcp, options.block_size, 1);
    kv::BlockPool blocks(64);
    std::vector<kv::BlockTable> tables;
    for (int i = 0; i < 3; ++i) tables.emplace_back(blocks, layout);
    std::vector<int64_t> computed(3, 0);

    std::vector<std::vector<Snapshot>> before;
    for (int64_t l = 0; l < lm.num_layers(); ++l) {
      before.emplace_back();
      for (const Tensor* t : o_proj_of(lm, l).persistent_tensors()) {
        before.back().push_back({t->raw(), t->clone()});
      }
    }
    Tensor mine = Tensor::zeros({1}, DType::kI64);  // this rank's step-left bytes, then all's
    world.barrier();
    if (world.rank() == 0) baseline = allocation_stats().live_bytes;
    world.barrier();

    int64_t gathered = 0;
    for (size_t s = 0; s < steps.size(); ++s) {
      SCOPED_TRACE(fmt::format("step {} rank {}", s, world.rank()));
      {
        std::vector<attention::ScheduledRequest> batch;
        const std::vector<int32_t>& ids = step_ids[s];
        for (const auto& [req, n] : steps[s]) {
          auto& table = tables[static_cast<size_t>(req)];
          ASSERT_TRUE(table.grow(computed[static_cast<size_t>(req)] + n));
          batch.push_back({computed[static_cast<size_t>(req)], n,
                           std::vector<int32_t>(table.ids().begin(), table.ids().end())});
          computed[static_cast<size_t>(req)] += n;
        }
        const attention::AttentionMetadata md = builder->build(batch);
        ASSERT_EQ(md.decode_only(), !gathers[s]);
        Tensor token_ids = Tensor::empty({static_cast<int64_t>(ids.size())}, DType::kI32);
        std::copy(ids.begin(), ids.end(), token_ids.data<int32_t>());
        Tensor rows = Tensor::zeros({1}, DType::kI64);
        const Tensor logits = lm.forward(md, token_ids, rows);
        ASSERT_EQ(logits.size(0), 1);
      }
      // Weights: same addresses, same bytes, shard alias back.
      for (int64_t l = 0; l < lm.num_layers(); ++l) {
        const OutputProjection& proj = o_proj_of(lm, l);
        EXPECT_FALSE(proj.full_weight_active()) << "layer " << l;
        EXPECT_EQ(proj.active_weight().raw(), before[l][0].address) << "layer " << l;
        const auto now = proj.persistent_tensors();
        ASSERT_EQ(now.size(), before[l].size());
        for (size_t i = 0; i < now.size(); ++i) {
          EXPECT_EQ(now[i]->raw(), before[l][i].address) << "layer " << l << " tensor " << i;
          EXPECT_EQ(std::memcmp(now[i]->raw(), before[l][i].bytes.raw(), now[i]->nbytes()), 0)
              << "layer " << l << " tensor " << i;
        }
      }
      // Workspace: allocated once, one layer's full weight, (T - 1) / T of each layer gathered.
      const FullWeightWorkspace& ws = lm.full_weight_workspace();
      EXPECT_EQ(ws.allocations(), int8 ? 3 : 1);
      EXPECT_EQ(ws.capacity_bytes(), full_bytes);
      if (gathers[s]) gathered += lm.num_layers() * gathered_per_layer * (tp - 1) / tp;
      EXPECT_EQ(ws.gathered_bytes(), gathered);
      // Live bytes: the baseline plus what every rank says a step leaves behind.
      int64_t left = ws.capacity_bytes();
      for (int64_t l = 0; l < lm.num_layers(); ++l) {
        left += static_cast<int64_t>(
            dynamic_cast<SfaAttentionLayer&>(lm.layer(l).attention()).last_selection().nbytes());
      }
      mine.data<int64_t>()[0] = left;
      world.all_reduce(mine);
      world.barrier();
      if (world.rank() == 0) {
        EXPECT_EQ(allocation_stats().live_bytes - baseline, mine.data<int64_t>()[0])
            << "tensor bytes beyond the workspaces and selections";
      }
      world.barrier();
    }
  });
}

TEST(OProjInvariant, ShardIsTheOnlyPersistentCopy) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  for (int tp : {2, 4}) {
    for (int dcp : {1, tp}) {
      for (OProjQuant quant : {OProjQuant::kNone, OProjQuant::kInt8}) {
        run_invariant(tp, dcp, quant, seed);
      }
    }
  }
}

}  // namespace
}  // namespace ctxpar::model
