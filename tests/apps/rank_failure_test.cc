// One failing rank fails the whole job, with one message naming the rank and the error and a
// non-zero exit, within seconds: at start-up (a value only that rank sees), while loading
// (an unreadable shard, out of memory), in the middle of decoding, and in rank 0's sampler.
// Under mpirun and with in-process ranks. Faults come from the test-only CTXPAR_TEST_FAULT
// hook (core/fault_injection.h); every run is bounded by `timeout`, so a hang fails.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "run_command.h"
#include "support/seeded_rng.h"

namespace ctxpar::app {
using test::CommandResult;
using test::run_command;
namespace {

constexpr int kTimeoutStatus = 124;  // `timeout` exits with it when the command hung

struct Fault {
  std::string spec;     // CTXPAR_TEST_FAULT
  int rank;             // the failing rank
  std::string message;  // what its error line must contain
  int status;           // the job's exit status
};

std::vector<Fault> faults(int world_size, std::mt19937& rng) {
  auto any_rank = [&] { return static_cast<int>(rng() % world_size); };
  const int startup = any_rank(), load = any_rank(), oom = any_rank(), decode = any_rank();
  const int step = 1 + static_cast<int>(rng() % 4);  // after the prefill, inside the decodes
  return {
      {"startup:" + std::to_string(startup), startup, "at start-up on rank", 2},
      {"load:" + std::to_string(load), load, "at load on rank", 3},
      {"oom:" + std::to_string(oom), oom, "out of memory", 3},
      {"decode:" + std::to_string(decode) + ":" + std::to_string(step), decode,
       "at decode on rank " + std::to_string(decode) + " (step " + std::to_string(step) + ")", 3},
      {"sampler:0:" + std::to_string(step), 0, "at sampler on rank 0", 3},
  };
}

int count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

std::vector<std::string> generate_args(int world_size) {
  return {CTXPAR_BINARY,  "generate",
          "--model",      "builtin:tiny-llama",
          "-tp",          std::to_string(world_size),
          "-dcp",         "2",
          "--prompt",     "one rank fails",
          "--max-tokens", "8",
          "--ignore-eos", "--max-model-len",
          "128",          "--kv-cache-memory",
          "16MiB"};
}

void expect_whole_job_fails(const CommandResult& r, const Fault& f) {
  ASSERT_NE(r.exit_status, kTimeoutStatus) << "the job hung after rank " << f.rank << " failed:\n"
                                           << r.err;
  EXPECT_EQ(r.exit_status, f.status) << r.err;
  const std::string line = "ctxpar: error: rank " + std::to_string(f.rank) + ": ";
  EXPECT_EQ(count(r.err, "ctxpar: error:"), 1) << "one error line, not one per rank:\n" << r.err;
  EXPECT_EQ(count(r.err, line), 1) << r.err;
  EXPECT_NE(r.err.find(f.message), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("output_token_ids"), std::string::npos) << "no output after a failure";
}

TEST(RankFailure, UnderMpirunOneRankEndsEveryRank) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  constexpr int kRanks = 4;
  for (const Fault& f : faults(kRanks, rng)) {
    SCOPED_TRACE(f.spec);
    std::vector<std::string> args = {"--kill-after=5",
                                     "60",
                                     MPIEXEC_BINARY,
                                     "-np",
                                     std::to_string(kRanks),
                                     "--oversubscribe",
                                     "-x",
                                     "CTXPAR_TEST_FAULT=" + f.spec};
    const auto gen = generate_args(kRanks);
    args.insert(args.end(), gen.begin(), gen.end());
    args.insert(args.end(), {"--distributed-executor-backend", "mpi"});
    expect_whole_job_fails(run_command("/usr/bin/timeout", args), f);
  }
}

TEST(RankFailure, WithInProcessRanksOneRankEndsEveryRank) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937 rng(seed);
  constexpr int kRanks = 4;
  for (const Fault& f : faults(kRanks, rng)) {
    SCOPED_TRACE(f.spec);
    std::vector<std::string> args = {"--kill-after=5", "60", "/usr/bin/env",
                                     "CTXPAR_TEST_FAULT=" + f.spec};
    const auto gen = generate_args(kRanks);
    args.insert(args.end(), gen.begin(), gen.end());
    expect_whole_job_fails(run_command("/usr/bin/timeout", args), f);
  }
}

TEST(RankFailure, AMalformedFaultSpecIsAnInputError) {
  const CommandResult r = run_command(
      "/usr/bin/env", {"CTXPAR_TEST_FAULT=nowhere:1", CTXPAR_BINARY, "generate", "--prompt", "x",
                       "--max-tokens", "1", "--max-model-len", "64", "--kv-cache-memory", "4MiB"});
  EXPECT_EQ(r.exit_status, 2) << r.err;
  EXPECT_NE(r.err.find("CTXPAR_TEST_FAULT='nowhere:1' is not valid"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ctxpar::app
