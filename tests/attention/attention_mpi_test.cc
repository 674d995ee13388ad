// A subset of the attention oracle on 4 MPI processes (mpirun -np 4): GQA and MLA layers with
// every N dividing 4, several (I, B) and both merge plans, compared on rank 0 with the same
// scenario run at T = N = 1 in-process. Every rank builds the same scenario from a seed that
// rank 0 draws and broadcasts.
#include <gtest/gtest.h>
#include <mpi.h>

#include <fmt/format.h>
#include <cstdio>
#include <cstring>
#include <random>

#include "attention_oracle.h"
#include "ctxpar/comm/mpi_communicator.h"
#include "ctxpar/comm/mpi_session.h"
#include "shared_seed.h"

namespace ctxpar::testing {
namespace {

void check_type(AttnType type) {
  const auto world = MpiCommunicator::world();
  ASSERT_EQ(world->size(), 4) << "run this test with mpirun -np 4";
  const uint32_t seed = test_support::shared_seed(*world);
  SCOPED_TRACE(fmt::format("seed {}", seed));
  std::mt19937 rng(seed);
  LayerShape shape;
  shape.type = type;
  shape.num_heads = 8;
  shape.num_kv_heads = 1;
  const Scenario s = make_scenario(shape, rng, 4, 40);
  RunResult reference;
  if (world->rank() == 0) reference = run_layer(s, RunConfig{});
  for (int n : {1, 2, 4}) {
    for (const auto& [interleave, block] :
         std::vector<std::pair<int, int>>{{1, 1}, {2, 16}, {16, 16}}) {
      for (auto plan :
           {attention::DcpCommPlan::kAllGatherReduceScatter, attention::DcpCommPlan::kAllToAll}) {
        RunConfig cfg;
        cfg.tp = 4;
        cfg.dcp = n;
        cfg.interleave = interleave;
        cfg.block_size = block;
        cfg.plan = plan;
        cfg.max_context_chunk = 7;
        SCOPED_TRACE(fmt::format("N={} I={} B={} {}", n, interleave, block,
                                 attention::dcp_comm_plan_name(plan)));
        const RunResult got = run_layer_rank(*world, s, cfg);
        if (world->rank() != 0) continue;
        ASSERT_EQ(got.outputs.size(), reference.outputs.size());
        for (size_t i = 0; i < got.outputs.size(); ++i) {
          EXPECT_LE(relative_error(got.outputs[i], reference.outputs[i]), 1e-5) << "step " << i;
        }
      }
    }
  }
}

TEST(AttentionOracleMpi, GqaOnFourProcessesMatchesOneRank) {
  check_type(AttnType::kGqa);
}
TEST(AttentionOracleMpi, MlaOnFourProcessesMatchesOneRank) {
  check_type(AttnType::kMla);
}

}  // namespace
}  // namespace ctxpar::testing

int main(int argc, char** argv) {
  ctxpar::MpiSession session(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (session.world_rank() != 0) {  // one report: rank 0's (failures are summed below)
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int failed_ranks = 0;
  MPI_Allreduce(&failed, &failed_ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (session.world_rank() == 0 && failed_ranks > 0) {
    std::fprintf(stderr, "%d of %d ranks had failures\n", failed_ranks, session.world_size());
  }
  return failed_ranks > 0 ? 1 : 0;
}
