// The collective checks of the in-process tests, run by every rank of an mpirun job
// (registered with ctest as 4 processes). Rank 0 prints the usual gtest report; other ranks
// print only their failed assertions, prefixed with their rank. The exit status is non-zero
// when any rank failed.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>

#include "collective_checks.h"
#include "ctxpar/comm/mpi_communicator.h"
#include "ctxpar/comm/mpi_session.h"
#include "ctxpar/comm/parallel_groups.h"
#include "ctxpar/core/error.h"

namespace ctxpar::testing {
namespace {

const CheckOptions kMpi{};  // MPI's summation order is its own: sums checked with tolerance

TEST(MpiCollectives, RunsUnderMpirun) {
  EXPECT_TRUE(launched_by_mpirun());
  auto world = MpiCommunicator::world();
  EXPECT_EQ(world->backend_name(), "mpi");
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_EQ(world->size(), size);
}

TEST(MpiCollectives, MatchSerialReference) {
  auto world = MpiCommunicator::world();
  const uint64_t seed = shared_seed(*world);
  SCOPED_TRACE(fmt::format("seed {}", seed));
  for (const auto& c : make_cases(seed, 24)) check_every_collective(*world, c, kMpi);
}

TEST(MpiCollectives, SplitSubGroups) {
  auto world = MpiCommunicator::world();
  const uint64_t seed = shared_seed(*world);
  SCOPED_TRACE(fmt::format("seed {}", seed));
  check_split_groups(*world, seed, kMpi);
}

TEST(MpiCollectives, InterleavedOnSeveralGroups) {
  auto world = MpiCommunicator::world();
  const uint64_t seed = shared_seed(*world);
  SCOPED_TRACE(fmt::format("seed {}", seed));
  run_interleaved_collectives(*world, world->size() % 2 == 0 ? 2 : 1, 300, seed, kMpi);
}

TEST(MpiCollectives, ParallelGroupsMembership) {
  auto world = MpiCommunicator::world();
  for (int n = 1; n <= world->size(); ++n) {
    if (world->size() % n != 0) continue;
    ParallelGroups groups(*world, world->size(), n);
    EXPECT_EQ(groups.tp_rank(), world->rank());
    EXPECT_EQ(groups.dcp_rank(), world->rank() % n);
    EXPECT_EQ(groups.dcp_size(), n);
    Tensor mine = Tensor::empty({1}, DType::kI64);
    mine.data<int64_t>()[0] = world->rank();
    const Tensor members = groups.dcp().all_gather(mine, 0);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(members.data<int64_t>()[i], world->rank() / n * n + i) << "N=" << n;
    }
  }
}

TEST(MpiCollectives, VerificationTurnsMismatchesIntoErrorsOnEveryRank) {
  auto world = MpiCommunicator::world();
  world->set_verify_collectives(true);
  const int odd_one = world->size() - 1;
  const DType dtype = world->rank() == odd_one && odd_one > 0 ? DType::kBF16 : DType::kF32;
  Tensor in = Tensor::zeros({4, 8}, dtype);
  Tensor out = Tensor::empty({4 * world->size(), 8}, dtype);
  if (odd_one == 0) return;  // a single process cannot disagree with itself
  try {
    world->all_gather(in, out, 0);
    ADD_FAILURE() << "mismatched all_gather did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format(
                  "all_gather: rank {} sent bfloat16[4, 8], rank 0 sent float32[4, 8]", odd_one)),
              std::string::npos)
        << e.what();
  }
  // A different collective kind: without verification this would deadlock.
  try {
    if (world->rank() == odd_one) {
      world->barrier();
    } else {
      Tensor t = Tensor::zeros({2}, DType::kF32);
      world->all_reduce(t);
    }
    ADD_FAILURE() << "mismatched collective kinds did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fmt::format("rank {} called barrier", odd_one)),
              std::string::npos)
        << e.what();
  }
  // Still usable, and sub-groups inherit verification.
  auto sub = world->split(0, world->rank());
  Tensor t = Tensor::empty({1}, DType::kI32);
  t.fill(1);
  sub->all_reduce(t);
  EXPECT_EQ(t.data<int32_t>()[0], world->size());
}

// Prints a rank's failed assertions (non-zero ranks have no default printer).
class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.message());
  }

 private:
  int rank_;
};

}  // namespace
}  // namespace ctxpar::testing

int main(int argc, char** argv) {
  ctxpar::MpiSession session(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int rank = session.world_rank();
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new ctxpar::testing::RankFailurePrinter(rank));
  }
  const int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int failed_ranks = 0;
  MPI_Allreduce(&failed, &failed_ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && failed_ranks > 0) {
    std::fprintf(stderr, "%d of %d ranks had failures\n", failed_ranks, session.world_size());
  }
  return failed_ranks > 0 ? 1 : 0;
}
