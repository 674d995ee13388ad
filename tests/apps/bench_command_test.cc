// `ctxpar bench` as a user runs it: one row per (batch, context, N) with the fields the
// table and --json promise, the decode batch of a lockstep --dummy-context run, the ISA the
// kernels ran (lowered by CTXPAR_ISA), and bad lists as one-line usage errors.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "run_command.h"

namespace ctxpar::app {
using test::CommandResult;
using test::run_command;
namespace {

std::vector<std::string> bench_args(const std::string& batches, const std::string& contexts) {
  return {"bench",
          "--model",
          "builtin:tiny-qwen2",
          "-tp",
          "2",
          "-dcp",
          "2",
          "--batch-sizes",
          batches,
          "--context-lengths",
          contexts,
          "--output-len",
          "3",
          "--kv-cache-memory",
          "16MiB",
          "--num-iters-warmup",
          "0"};
}

TEST(BenchCommand, JsonRowsPerShapeAndN) {
  std::mt19937 rng(std::random_device{}());
  const int64_t batch = 1 + rng() % 3, context = 5 + rng() % 40;  // odd sizes welcome
  std::vector<std::string> args = bench_args(std::to_string(batch), std::to_string(context));
  args.push_back("--json");
  const CommandResult r = run_command(CTXPAR_BINARY, args);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const nlohmann::json rows = nlohmann::json::parse(r.out);
  ASSERT_EQ(rows.size(), 2u) << rows;  // N = 1, then the requested N = 2
  for (size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json& row = rows[i];
    EXPECT_EQ(row.at("dcp"), i == 0 ? 1 : 2);
    EXPECT_EQ(row.at("batch"), batch);
    EXPECT_EQ(row.at("context"), context);
    EXPECT_GT(row.at("decode_tokens_per_second").get<double>(), 0);
    EXPECT_GT(row.at("prefill_tokens_per_second").get<double>(), 0);
    EXPECT_GT(row.at("kv_bytes_used_per_rank").get<int64_t>(), 0);
    const std::string isa = row.at("isa");
    EXPECT_TRUE(isa == "scalar" || isa == "avx2" || isa == "avx512" || isa == "amx") << isa;
  }
}

TEST(BenchCommand, DummyContextDecodesTheWholeBatchEveryStep) {
  std::vector<std::string> args = bench_args("3", "600");
  args.insert(args.end(), {"--dummy-context", "--json"});
  const CommandResult r = run_command(CTXPAR_BINARY, args);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  for (const nlohmann::json& row : nlohmann::json::parse(r.out)) {
    EXPECT_TRUE(row.at("prefill_tokens_per_second").is_null()) << row;
    EXPECT_DOUBLE_EQ(row.at("mean_decode_batch").get<double>(), 3.0) << row;
  }
}

TEST(BenchCommand, PrintsTheIsaCtxparIsaAsked) {
  ASSERT_EQ(setenv("CTXPAR_ISA", "scalar", 1), 0);
  std::vector<std::string> args = bench_args("1", "4");
  const CommandResult text = run_command(CTXPAR_BINARY, args);
  args.push_back("--json");
  const CommandResult json = run_command(CTXPAR_BINARY, args);
  unsetenv("CTXPAR_ISA");
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_EQ(text.out.substr(0, text.out.find('\n')), "isa scalar");
  ASSERT_EQ(json.exit_status, 0) << json.err;
  for (const nlohmann::json& row : nlohmann::json::parse(json.out))
    EXPECT_EQ(row.at("isa"), "scalar");
}

TEST(BenchCommand, BadListsAreUsageErrors) {
  for (const auto& [batches, contexts, says] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"0", "4", "--batch-sizes values must be >= 1, got 0"},
           {"1", "8,x", "--context-lengths '8,x': 'x' is not a number"},
           {"", "4", "--batch-sizes is empty"}}) {
    const CommandResult r = run_command(CTXPAR_BINARY, bench_args(batches, contexts));
    EXPECT_NE(r.exit_status, 0) << batches << " " << contexts;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace ctxpar::app
