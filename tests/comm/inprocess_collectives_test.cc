// In-process backend against serial references: every collective, every supported dtype,
// first/middle/last dims, strided inputs and outputs, group sizes 1..8 and 16.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "collective_checks.h"
#include "ctxpar/comm/inprocess_communicator.h"

namespace ctxpar::testing {
namespace {

const CheckOptions kInProcess{.rank_order_sums = true};

uint64_t fresh_seed() {
  std::random_device rd;
  return (uint64_t{rd()} << 32) | rd();
}

class InProcessCollectives : public ::testing::TestWithParam<int> {};

TEST_P(InProcessCollectives, MatchSerialReference) {
  const int world_size = GetParam();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {} world size {}", seed, world_size));
  const auto cases = make_cases(seed, 24);
  run_inprocess_ranks(world_size, [&](Communicator& world) {
    EXPECT_EQ(world.size(), world_size);
    EXPECT_EQ(world.backend_name(), "inprocess");
    for (const auto& c : cases) check_every_collective(world, c, kInProcess);
  });
}

TEST_P(InProcessCollectives, SplitSubGroups) {
  const int world_size = GetParam();
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {} world size {}", seed, world_size));
  run_inprocess_ranks(world_size,
                      [&](Communicator& world) { check_split_groups(world, seed, kInProcess); });
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, InProcessCollectives,
                         ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8));

TEST(InProcessCollectives, SixteenRanks) {
  const uint64_t seed = fresh_seed();
  SCOPED_TRACE(fmt::format("seed {}", seed));
  const auto cases = make_cases(seed, 15);
  run_inprocess_ranks(16, [&](Communicator& world) {
    for (const auto& c : cases) check_every_collective(world, c, kInProcess);
  });
}

// Thousands of back-to-back collectives on interleaved groups; a lost wake-up, a reused
// slot or a stale generation would show as a hang or a wrong value.
TEST(InProcessCollectives, ThousandsInterleavedOnSeveralGroups) {
  for (const auto& [world_size, dcp_size] : {std::pair{6, 3}, std::pair{4, 2}, std::pair{5, 5}}) {
    const uint64_t seed = fresh_seed();
    SCOPED_TRACE(fmt::format("seed {} world {} dcp {}", seed, world_size, dcp_size));
    run_with_deadline(60, "interleaved collectives", [&] {
      run_inprocess_ranks(world_size, [&](Communicator& world) {
        run_interleaved_collectives(world, dcp_size, 1000, seed, kInProcess);
      });
    });
  }
}

// Many tiny collectives with no checking in between: the sync path itself, with more ranks
// than cores so ranks sleep and wake constantly.
TEST(InProcessCollectives, BackToBackBarriersAndReductions) {
  const int world_size = 8;
  run_with_deadline(60, "back-to-back collectives", [&] {
    run_inprocess_ranks(world_size, [&](Communicator& world) {
      auto half = world.split(world.rank() / 4, world.rank());
      Tensor counter = Tensor::empty({3}, DType::kI64);
      for (int i = 0; i < 3000; ++i) {
        counter.fill(static_cast<double>(world.rank() + i));
        Communicator& comm = i % 3 == 0 ? world : *half;
        comm.all_reduce(counter);
        // Sum over the group of (member rank + i).
        const int first = &comm == &world ? 0 : world.rank() / 4 * 4;
        int64_t want = 0;
        for (int m = 0; m < comm.size(); ++m) want += first + m + i;
        EXPECT_EQ(counter.data<int64_t>()[2], want) << "iteration " << i;
        if (i % 7 == 0) comm.barrier();
      }
    });
  });
}

}  // namespace
}  // namespace ctxpar::testing
