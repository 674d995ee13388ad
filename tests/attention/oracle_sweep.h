// The (T, N) shapes and per-shape config sweep shared by the GQA and MLA oracle tests.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "attention_oracle.h"

namespace ctxpar::testing {

struct TpDcp {
  int tp;
  int dcp;
};

// Every N dividing T, T in {1, 2, 3, 4, 6, 8}.
inline std::vector<TpDcp> all_tp_dcp() {
  std::vector<TpDcp> out;
  for (int tp : {1, 2, 3, 4, 6, 8})
    for (int n = 1; n <= tp; ++n)
      if (tp % n == 0) out.push_back({tp, n});
  return out;
}

inline std::string tp_dcp_name(const ::testing::TestParamInfo<TpDcp>& info) {
  return fmt::format("T{}_N{}", info.param.tp, info.param.dcp);
}

// (I, B) pairs: I in {1, 2, B} for B in {1, 16, 64}.
inline std::vector<std::pair<int, int>> interleave_block_pairs() {
  return {{1, 1}, {1, 16}, {2, 16}, {16, 16}, {1, 64}, {2, 64}, {64, 64}};
}

// Runs `s` under every (I, B, plan) for (tp, dcp) in f32 and a subset in bf16 and in e4m3
// (--kv-cache-dtype fp8), comparing every step with the T = N = 1 runs at 1e-5 (f32) and 1e-2
// (bf16, e4m3), and checks the KV bytes per rank against the same T without DCP.
inline void sweep_against_single_rank(const Scenario& s, const TpDcp& p, std::mt19937& rng) {
  RunConfig base;
  base.threads_per_rank = 2;  // exercises the split-K paths of the kernels
  const RunResult ref_f32 = run_layer(s, base);
  base.cache_dtype = DType::kBF16;
  const RunResult ref_bf16 = run_layer(s, base);
  base.cache_dtype = DType::kF8E4M3;
  const RunResult ref_fp8 = run_layer(s, base);

  const std::vector<Tensor> exact = reference_outputs(s);
  for (size_t i = 0; i < exact.size(); ++i) {
    ASSERT_LE(relative_error(ref_f32.outputs[i], exact[i]), 1e-5) << "T=N=1 f32 step " << i;
    ASSERT_LE(relative_error(ref_bf16.outputs[i], exact[i]), 1e-2) << "T=N=1 bf16 step " << i;
    // e4m3 keeps 3 mantissa bits: ~2^-5 relative per cached value.
    ASSERT_LE(relative_error(ref_fp8.outputs[i], exact[i]), 1e-1) << "T=N=1 e4m3 step " << i;
  }

  for (const auto& [interleave, block] : interleave_block_pairs()) {
    for (auto plan :
         {attention::DcpCommPlan::kAllGatherReduceScatter, attention::DcpCommPlan::kAllToAll}) {
      if (p.dcp == 1 && plan == attention::DcpCommPlan::kAllToAll) continue;  // no merge at N=1
      for (DType dtype : {DType::kF32, DType::kBF16, DType::kF8E4M3}) {
        // bf16 on a third of the (I, B, plan) points and e4m3 on a sixth keep the sweep inside
        // its time budget.
        if (dtype == DType::kBF16 && rng() % 3 != 0) continue;
        if (dtype == DType::kF8E4M3 && rng() % 6 != 0) continue;
        RunConfig cfg;
        cfg.tp = p.tp;
        cfg.dcp = p.dcp;
        cfg.interleave = interleave;
        cfg.block_size = block;
        cfg.plan = plan;
        cfg.cache_dtype = dtype;
        cfg.max_context_chunk = rng() % 2 ? 8192 : 1 + static_cast<int64_t>(rng() % 24);
        SCOPED_TRACE(fmt::format("I={} B={} {} {} chunk={}", interleave, block,
                                 attention::dcp_comm_plan_name(plan), dtype_name(dtype),
                                 cfg.max_context_chunk));
        const RunResult got = run_layer(s, cfg);
        const RunResult& want = dtype == DType::kF32    ? ref_f32
                                : dtype == DType::kBF16 ? ref_bf16
                                                        : ref_fp8;
        const double tol = dtype == DType::kF32 ? 1e-5 : 1e-2;
        ASSERT_EQ(got.outputs.size(), want.outputs.size());
        for (size_t i = 0; i < got.outputs.size(); ++i) {
          ASSERT_LE(relative_error(got.outputs[i], want.outputs[i]), tol) << "step " << i;
        }
        if (p.dcp > 1 && interleave == 1 && plan == attention::DcpCommPlan::kAllToAll &&
            dtype == DType::kF32) {
          RunConfig no_dcp = cfg;
          no_dcp.dcp = 1;
          const RunResult full = run_layer(s, no_dcp);
          EXPECT_EQ(got.kv_bytes_per_rank * p.dcp, full.kv_bytes_per_rank)
              << "KV bytes per rank must be the N = 1 figure divided by N";
          for (size_t i = 0; i < got.outputs.size(); ++i) {
            ASSERT_LE(relative_error(full.outputs[i], want.outputs[i]), tol) << "N=1 step " << i;
          }
        }
      }
    }
  }
}

}  // namespace ctxpar::testing
