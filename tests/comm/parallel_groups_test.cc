// ParallelGroups: membership and ranks of the TP and DCP groups for several (T, N), the time
// counted in their collectives, and the start-up validation messages.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <thread>

#include "comm_test_util.h"
#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/comm/parallel_groups.h"
#include "ctxpar/core/error.h"

namespace ctxpar::testing {
namespace {

std::vector<int64_t> members_of(Communicator& comm, int world_rank) {
  Tensor mine = Tensor::empty({1}, DType::kI64);
  mine.data<int64_t>()[0] = world_rank;
  Tensor all = comm.all_gather(mine, 0);
  return std::vector<int64_t>(all.data<int64_t>(), all.data<int64_t>() + all.numel());
}

TEST(ParallelGroups, MembershipForSeveralLayouts) {
  const std::pair<int, int> layouts[] = {{1, 1}, {2, 1}, {2, 2}, {3, 3}, {4, 2}, {4, 4},
                                         {6, 2}, {6, 3}, {8, 2}, {8, 4}, {5, 1}, {7, 7}};
  for (const auto& [t, n] : layouts) {
    SCOPED_TRACE(fmt::format("T={} N={}", t, n));
    run_with_deadline(30, "ParallelGroups", [&, t = t, n = n] {
      run_inprocess_ranks(t, [&](Communicator& world) {
        ParallelGroups groups(world, t, n);
        const int r = world.rank();
        EXPECT_EQ(&groups.world(), &world);
        EXPECT_EQ(groups.tp_size(), t);
        EXPECT_EQ(groups.tp_rank(), r);
        EXPECT_EQ(groups.dcp_size(), n);
        EXPECT_EQ(groups.dcp_rank(), r % n);
        EXPECT_EQ(groups.dcp_group(), r / n);
        std::vector<int64_t> tp_members(t), dcp_members(n);
        std::iota(tp_members.begin(), tp_members.end(), 0);
        std::iota(dcp_members.begin(), dcp_members.end(), r / n * n);
        EXPECT_EQ(members_of(groups.tp(), r), tp_members);
        EXPECT_EQ(members_of(groups.dcp(), r), dcp_members);
        // The groups are usable independently: a DCP-only sum of world ranks.
        Tensor x = Tensor::empty({1}, DType::kI32);
        x.data<int32_t>()[0] = r;
        groups.dcp().all_reduce(x);
        EXPECT_EQ(x.data<int32_t>()[0],
                  std::accumulate(dcp_members.begin(), dcp_members.end(), int64_t{0}));
      });
    });
  }
}

TEST(ParallelGroups, CollectiveSecondsCountTheWaitInTpAndDcpCollectivesOnly) {
  // Rank 1 arrives 50 ms late at a world, a TP and a DCP all-reduce. Each rank's count grows by
  // the time it spent inside the TP and DCP ones, as its own clock measures it around the call
  // (waiting included), and not at all for the world one. Compared with the rank's own clock,
  // not with 50 ms, so a rank descheduled on a loaded machine cannot fail it.
  constexpr auto kLate = std::chrono::milliseconds(50);
  using Clock = std::chrono::steady_clock;
  run_with_deadline(30, "ParallelGroups", [&] {
    run_inprocess_ranks(4, [&](Communicator& world) {
      ParallelGroups groups(world, 4, 2);
      EXPECT_EQ(groups.collective_seconds(), 0.0);
      Tensor x = Tensor::zeros({3}, DType::kF32);
      // Seconds `collective` took by this rank's clock, and by the counter.
      auto timed = [&](Communicator& comm) -> std::pair<double, double> {
        if (world.rank() == 1) std::this_thread::sleep_for(kLate);
        const double before = groups.collective_seconds();
        const Clock::time_point start = Clock::now();
        comm.all_reduce(x);
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        return {elapsed, groups.collective_seconds() - before};
      };
      world.barrier();
      EXPECT_EQ(timed(world).second, 0.0) << "world collectives are not counted";
      for (Communicator* comm : {&groups.tp(), &groups.dcp()}) {
        const auto [elapsed, counted] = timed(*comm);
        EXPECT_LE(counted, elapsed);
        EXPECT_GE(counted, elapsed - 0.002) << "the time inside the collective is counted";
      }
      // Rank 0 shares both groups with the late rank 1: it waited, and that counts.
      if (world.rank() == 0) {
        EXPECT_GT(groups.collective_seconds(), 0.02);
      }
    });
  });
}

TEST(ParallelGroups, ValidationNamesNumbersAndRule) {
  auto message = [](int world, int t, int n) -> std::string {
    try {
      validate_parallel_sizes(world, t, n);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message(4, 4, 2), "");
  EXPECT_EQ(message(6, 6, 3), "");
  EXPECT_EQ(message(1, 1, 1), "");
  std::string m = message(8, 4, 2);
  EXPECT_NE(m.find("tensor-parallel size 4 must equal the world size 8"), std::string::npos) << m;
  m = message(4, 4, 0);
  EXPECT_NE(m.find("decode-context-parallel size 0"), std::string::npos) << m;
  EXPECT_NE(m.find("at least 1"), std::string::npos) << m;
  m = message(4, 0, 1);
  EXPECT_NE(m.find("tensor-parallel size 0"), std::string::npos) << m;
  m = message(6, 6, 4);
  EXPECT_NE(m.find("decode-context-parallel size 4 must divide the tensor-parallel size 6"),
            std::string::npos)
      << m;
  m = message(3, 3, -2);
  EXPECT_NE(m.find("-2"), std::string::npos) << m;
}

TEST(ParallelGroups, BadSizesFailEveryRankWithoutHanging) {
  run_with_deadline(30, "ParallelGroups validation", [] {
    std::string error;
    try {
      run_inprocess_ranks(4, [](Communicator& world) { ParallelGroups groups(world, 4, 3); });
    } catch (const Error& e) {
      error = e.what();
    }
    EXPECT_NE(error.find("decode-context-parallel size 3 must divide"), std::string::npos) << error;
  });
}

}  // namespace
}  // namespace ctxpar::testing
