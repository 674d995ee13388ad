// The sparse-attention layer in all four SFA modes on random weights, over a schedule of
// chunked prefills, mixed and decode-only steps (tests/sfa's oracle harness), with an
// index_topk small enough that the selection matters:
//  - DSA-CP (N = 1) and DSA-CP + DCP (N = T) for T in {2, 4}, I in {1, 2, B}, both merge
//    plans, both indexer modes, with and without sequence-parallel rows, select exactly
//    what native SFA (T = N = 1) selects and match its outputs within 1e-5 (f32), and the
//    double-precision reference attending those selections;
//  - an int8 or bf16 o_proj matches the native run with the same o_proj, and bf16 weights
//    the native bf16 run.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "sfa_oracle.h"
#include "support/seeded_rng.h"

namespace ctxpar::sfa_test {
namespace {

using attention::DcpCommPlan;
using attention::SfaIndexerMode;

struct Seeded {
  Seeded() : seed(test_support::test_seed()), rng(seed) {}
  uint32_t seed;
  std::mt19937 rng;
};

bool identical(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

void expect_same_run(const SfaRunResult& got, const SfaRunResult& want, double tol) {
  ASSERT_EQ(got.outputs.size(), want.outputs.size());
  for (size_t i = 0; i < got.outputs.size(); ++i) {
    EXPECT_LE(relative_error(got.outputs[i], want.outputs[i]), tol) << "output, step " << i;
    ASSERT_TRUE(identical(got.selections[i], want.selections[i])) << "selection, step " << i;
  }
}

SfaScenario scenario_for(std::mt19937& rng, int max_t) {
  SfaShape shape;
  shape.num_heads = 2 * max_t;
  shape.index_heads = 1 + static_cast<int64_t>(rng() % 4);
  shape.index_topk = 4 + static_cast<int64_t>(rng() % 8);  // contexts reach ~45
  return make_sfa_scenario(shape, rng, 4, 38);
}

TEST(DsaCpLayer, AllFourModesEqualNativeSfa) {
  Seeded s;
  SCOPED_TRACE(fmt::format("seed {}", s.seed));
  const SfaScenario scenario = scenario_for(s.rng, 4);
  const SfaReference reference(scenario);
  for (int block : {4, 16}) {
    SfaRunConfig native;
    native.block_size = block;
    const SfaRunResult want = run_sfa_layer(scenario, native);
    bool saw_decode_only = false, saw_prefill = false;
    for (bool d : want.decode_only) (d ? saw_decode_only : saw_prefill) = true;
    ASSERT_TRUE(saw_decode_only && saw_prefill) << "the schedule must cover both o_proj paths";
    const std::vector<Tensor> exact = reference.outputs(want.selections);
    for (size_t i = 0; i < exact.size(); ++i) {
      ASSERT_LE(relative_error(want.outputs[i], exact[i]), 1e-5) << "native vs double, step " << i;
    }
    for (int t : {2, 4}) {
      for (int n : {1, t}) {
        for (int interleave : {1, 2, block}) {
          if (n == 1 && interleave != 1) continue;  // I only shapes a DCP layout
          SfaRunConfig cfg = native;
          cfg.tp = t;
          cfg.dcp = n;
          cfg.interleave = interleave;
          cfg.dsa_cp = true;
          cfg.sequence_parallel = s.rng() % 2 == 0;
          cfg.plan = s.rng() % 2 ? DcpCommPlan::kAllToAll : DcpCommPlan::kAllGatherReduceScatter;
          cfg.indexer_mode = s.rng() % 2 ? SfaIndexerMode::kSharded : SfaIndexerMode::kReplicated;
          cfg.max_context_chunk = s.rng() % 2 ? 8192 : 1 + static_cast<int64_t>(s.rng() % 48);
          SCOPED_TRACE(fmt::format("B={} T={} N={} I={} {} {} sp={} chunk={}", block, t, n,
                                   interleave, attention::dcp_comm_plan_name(cfg.plan),
                                   attention::sfa_indexer_mode_name(cfg.indexer_mode),
                                   cfg.sequence_parallel, cfg.max_context_chunk));
          const SfaRunResult got = run_sfa_layer(scenario, cfg);
          expect_same_run(got, want, 1e-5);
          for (size_t i = 0; i < exact.size(); ++i) {
            EXPECT_LE(relative_error(got.outputs[i], exact[i]), 1e-5) << "vs double, step " << i;
          }
          if (n > 1) {
            EXPECT_EQ(got.latent_bytes_per_rank * n, want.latent_bytes_per_rank)
                << "DSA-CP + DCP keeps the latent cache sharded";
          } else {
            EXPECT_EQ(got.latent_bytes_per_rank, want.latent_bytes_per_rank)
                << "DSA-CP without DCP keeps the whole latent cache on every rank";
          }
        }
      }
    }
  }
}

TEST(DsaCpLayer, SequenceParallelRowsGiveTheSameOutputsInEveryMode) {
  Seeded s;
  SCOPED_TRACE(fmt::format("seed {}", s.seed));
  const SfaScenario scenario = scenario_for(s.rng, 4);
  for (int t : {2, 4}) {
    for (int n : {1, t}) {
      for (bool dsa_cp : {false, true}) {
        SCOPED_TRACE(fmt::format("T={} N={} dsa_cp={}", t, n, dsa_cp));
        SfaRunConfig cfg;
        cfg.tp = t;
        cfg.dcp = n;
        cfg.dsa_cp = dsa_cp;
        const SfaRunResult off = run_sfa_layer(scenario, cfg);
        cfg.sequence_parallel = true;
        const SfaRunResult on = run_sfa_layer(scenario, cfg);
        expect_same_run(on, off, 1e-6);
      }
    }
  }
}

TEST(DsaCpLayer, Int8AndBf16OProjAndBf16WeightsMatchTheirNativeRuns) {
  Seeded s;
  SCOPED_TRACE(fmt::format("seed {}", s.seed));
  const SfaScenario scenario = scenario_for(s.rng, 4);
  struct Numerics {
    const char* name;
    model::OProjQuant quant;
    DType weights;
    // Against the native run of the same numerics. int8: the quantized weights and the
    // per-token scales are the same in every mode (output_projection.h), but an activation
    // that differs from native in its last f32 bit may round to the neighbouring int8 step,
    // moving its token's output by one quantum (~1/127 of the token's largest activation
    // times a weight); a short step with a few such tokens reaches ~1.5e-3.
    double tol;
  };
  const Numerics numerics[] = {{"int8 o_proj", model::OProjQuant::kInt8, DType::kF32, 5e-3},
                               {"bf16 o_proj", model::OProjQuant::kBf16, DType::kF32, 1e-3},
                               {"bf16 weights", model::OProjQuant::kNone, DType::kBF16, 1e-2}};
  SfaRunConfig f32;
  const SfaRunResult want_f32 = run_sfa_layer(scenario, f32);
  for (const Numerics& num : numerics) {
    SCOPED_TRACE(num.name);
    SfaRunConfig native;
    native.o_proj_quant = num.quant;
    native.weight_dtype = num.weights;
    const SfaRunResult want = run_sfa_layer(scenario, native);
    if (num.weights == DType::kF32) {
      // Only o_proj differs from the f32 layer (bf16 weights may also change the selection).
      for (size_t i = 0; i < want.outputs.size(); ++i) {
        EXPECT_LE(relative_error(want.outputs[i], want_f32.outputs[i]), 5e-2)
            << "close to the f32 layer, step " << i;
      }
    }
    for (int t : {2, 4}) {
      for (int n : {1, t}) {
        SfaRunConfig cfg = native;
        cfg.tp = t;
        cfg.dcp = n;
        cfg.dsa_cp = true;
        cfg.interleave = n > 1 ? static_cast<int>(1 + s.rng() % 2) : 1;
        SCOPED_TRACE(fmt::format("T={} N={} I={}", t, n, cfg.interleave));
        const SfaRunResult got = run_sfa_layer(scenario, cfg);
        ASSERT_EQ(got.outputs.size(), want.outputs.size());
        for (size_t i = 0; i < got.outputs.size(); ++i) {
          EXPECT_LE(relative_error(got.outputs[i], want.outputs[i]), num.tol) << "step " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ctxpar::sfa_test
