// `ctxpar generate` with prefix caching as a user runs it: the hit rate in the summary (text
// and --json), the same tokens with --no-enable-prefix-caching and under mpirun, and a bad
// --prefix-caching-hash-algo as a one-line usage error.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "run_command.h"

namespace ctxpar::app {
using test::CommandResult;
using test::run_command;
namespace {

// Two prompts that share their first 36 ids (B·N = 8: four whole virtual blocks and a part),
// then differ.
std::vector<std::string> shared_prefix_args() {
  std::mt19937 rng(std::random_device{}());
  std::vector<uint32_t> a(45), b(45);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = rng() % 512;
    b[i] = i < 36 ? a[i] : rng() % 512;
  }
  return {"generate",
          "--max-model-len",
          "128",
          "--kv-cache-memory",
          "16MiB",
          "--model",
          "builtin:tiny-qwen2",
          "-tp",
          "2",
          "-dcp",
          "2",
          "--block-size",
          "4",
          "--max-tokens",
          "5",
          "--ignore-eos",
          "--prompt-token-ids",
          fmt::format("{}", fmt::join(a, ",")),
          "--prompt-token-ids",
          fmt::format("{}", fmt::join(b, ","))};
}

nlohmann::json run_json(std::vector<std::string> args) {
  args.push_back("--json");
  const CommandResult r = run_command(CTXPAR_BINARY, args);
  EXPECT_EQ(r.exit_status, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

std::vector<nlohmann::json> tokens_of(const nlohmann::json& j) {
  std::vector<nlohmann::json> out;
  for (const auto& r : j["requests"]) out.push_back(r["output_token_ids"]);
  return out;
}

TEST(PrefixCacheCommand, JsonCountsTokenHitsAndTheTokensAreThoseWithoutTheCache) {
  std::vector<std::string> args = shared_prefix_args();
  const nlohmann::json on = run_json(args);
  args.push_back("--no-enable-prefix-caching");
  const nlohmann::json off = run_json(args);
  EXPECT_EQ(tokens_of(on), tokens_of(off));
  const auto& pc = on["prefix_cache"];
  EXPECT_TRUE(pc["enabled"].get<bool>());
  EXPECT_EQ(pc["requests"].get<int64_t>(), 2);
  EXPECT_EQ(pc["queries"].get<int64_t>(), 2 * 45) << "every prompt token is queried";
  // The second prompt starts after the first one's 4 whole blocks (same step, or later).
  EXPECT_EQ(pc["hits"].get<int64_t>(), 32);
  EXPECT_DOUBLE_EQ(pc["hit_rate"].get<double>(), 32.0 / 90.0);
  EXPECT_FALSE(off["prefix_cache"]["enabled"].get<bool>());
  EXPECT_EQ(off["prefix_cache"]["queries"].get<int64_t>(), 0);
  EXPECT_EQ(off["prefix_cache"]["hits"].get<int64_t>(), 0);
}

TEST(PrefixCacheCommand, TheTextSummaryShowsTheHitRate) {
  std::vector<std::string> args = shared_prefix_args();
  const CommandResult on = run_command(CTXPAR_BINARY, args);
  ASSERT_EQ(on.exit_status, 0) << on.err;
  EXPECT_NE(on.out.find("Prefix cache: 35.6% hit rate (32 of 90 queried tokens from the cache, 2 "
                        "requests)"),
            std::string::npos)
      << on.out;
  args.push_back("--no-enable-prefix-caching");
  const CommandResult off = run_command(CTXPAR_BINARY, args);
  ASSERT_EQ(off.exit_status, 0) << off.err;
  EXPECT_NE(off.out.find("Prefix cache: off"), std::string::npos) << off.out;
  // The last of the two flags wins, as vLLM's argparse flags do.
  args.push_back("--enable-prefix-caching");
  const CommandResult again = run_command(CTXPAR_BINARY, args);
  EXPECT_NE(again.out.find("% hit rate"), std::string::npos) << again.out;
}

TEST(PrefixCacheCommand, MpiRanksGiveTheSameTokensAndHits) {
  const std::vector<std::string> args = shared_prefix_args();
  const nlohmann::json local = run_json(args);
  std::vector<std::string> mpi = {"-np", "2", "--oversubscribe", "--allow-run-as-root",
                                  CTXPAR_BINARY};
  mpi.insert(mpi.end(), args.begin(), args.end());
  for (const char* extra : {"--distributed-executor-backend", "mpi", "--json"}) {
    mpi.push_back(extra);
  }
  const CommandResult r = run_command(MPIEXEC_BINARY, mpi);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const nlohmann::json got = nlohmann::json::parse(r.out);
  EXPECT_EQ(tokens_of(got), tokens_of(local));
  EXPECT_EQ(got["prefix_cache"], local["prefix_cache"]);
}

TEST(PrefixCacheCommand, AnUnknownHashAlgoIsAOneLineUsageError) {
  const CommandResult r =
      run_command(CTXPAR_BINARY, {"generate", "--prompt", "hi", "--max-model-len", "128",
                                  "--prefix-caching-hash-algo", "xxhash"});
  EXPECT_EQ(r.exit_status, 2) << r.err;
  EXPECT_NE(r.err.find("'xxhash'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sha256"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace ctxpar::app
