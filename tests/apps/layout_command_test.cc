// `ctxpar layout`, run as a user runs it; its placements are checked against kv::DcpLayout.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "apps/run_command.h"
#include "ctxpar/kv/dcp_layout.h"
#include "support/seeded_rng.h"

namespace ctxpar {
namespace {

using test::CommandResult;

CommandResult layout(const std::vector<std::string>& args) {
  std::vector<std::string> full = {"layout"};
  full.insert(full.end(), args.begin(), args.end());
  return test::run_command(CTXPAR_BINARY, full);
}

std::string join(const std::vector<int32_t>& ids) {
  std::string text;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) text += ',';
    text += std::to_string(ids[i]);
  }
  return text;
}

// Checks a --json answer against the layout, for the block table the command was given (or
// its default 0, 1, 2, ... when `table` is empty).
void check_json(const std::string& out, const kv::DcpLayout& expected, int64_t seq_len,
                std::vector<int32_t> table) {
  const nlohmann::json j = nlohmann::json::parse(out);  // throws (fails) on anything but JSON
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j.at("dcp_size").get<int>(), expected.dcp_size());
  EXPECT_EQ(j.at("block_size").get<int>(), expected.block_size());
  EXPECT_EQ(j.at("interleave").get<int>(), expected.interleave());
  EXPECT_EQ(j.at("seq_len").get<int64_t>(), seq_len);
  if (table.empty()) {
    table.resize(static_cast<size_t>(expected.num_virtual_blocks(seq_len)));
    std::iota(table.begin(), table.end(), 0);
  }
  EXPECT_EQ(j.at("block_table").get<std::vector<int32_t>>(), table);
  EXPECT_EQ(j.at("local_seq_lens").get<std::vector<int64_t>>(), expected.local_lens(seq_len));
  const nlohmann::json& tokens = j.at("tokens");
  ASSERT_EQ(static_cast<int64_t>(tokens.size()), seq_len);
  for (int64_t p = 0; p < seq_len; ++p) {
    const nlohmann::json& t = tokens[static_cast<size_t>(p)];
    const int owner = expected.owner(p);
    ASSERT_EQ(t.at("pos").get<int64_t>(), p);
    ASSERT_EQ(t.at("rank").get<int>(), owner) << "pos " << p;
    ASSERT_EQ(t.at("local_index").get<int64_t>(), expected.local_index(p)) << "pos " << p;
    ASSERT_EQ(t.at("slot").get<int64_t>(), expected.slot(p, owner, table)) << "pos " << p;
  }
}

TEST(LayoutCommand, ReadmeMainJob) {
  const CommandResult r = layout({"--decode-context-parallel-size", "4", "--block-size", "16",
                                  "--cp-kv-cache-interleave-size", "1", "--seq-len", "100"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_NE(r.out.find("4 rank(s)"), std::string::npos) << r.out;
  const CommandResult j =
      layout({"--decode-context-parallel-size", "4", "--block-size", "16",
              "--cp-kv-cache-interleave-size", "1", "--seq-len", "100", "--json"});
  ASSERT_EQ(j.exit_status, 0) << j.err;
  check_json(j.out, kv::DcpLayout(4, 16, 1), 100, {});
}

TEST(LayoutCommand, JsonMatchesDcpLayoutForRandomConfigs) {
  const uint32_t seed = test_support::test_seed();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 24; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 8);
    const int b = std::array{1, 2, 4, 6, 16, 64}[rng() % 6];
    int i = 1 + static_cast<int>(rng() % static_cast<uint64_t>(b));
    while (b % i != 0) --i;
    const kv::DcpLayout expected(n, b, i);
    // Empty, shorter than the group, and lengths that cut a virtual block.
    const auto seq_len = static_cast<int64_t>(trial == 0   ? 0
                                              : trial == 1 ? rng() % static_cast<uint64_t>(n) + 1
                                                           : rng() % 700);
    SCOPED_TRACE(testing::Message() << "N " << n << " B " << b << " I " << i << " L " << seq_len);
    std::vector<std::string> args = {"--decode-context-parallel-size",
                                     std::to_string(n),
                                     "--block-size",
                                     std::to_string(b),
                                     "--cp-kv-cache-interleave-size",
                                     std::to_string(i),
                                     "--seq-len",
                                     std::to_string(seq_len),
                                     "--json"};
    std::vector<int32_t> table;
    const int64_t needed = expected.num_virtual_blocks(seq_len);
    if (trial % 2 == 1 && needed > 0) {  // a scattered table, sometimes longer than needed
      std::vector<int32_t> ids(static_cast<size_t>(needed + 10));
      std::iota(ids.begin(), ids.end(), 0);
      for (int32_t& id : ids) id *= 3;
      std::shuffle(ids.begin(), ids.end(), rng);
      table.assign(ids.begin(), ids.begin() + needed + static_cast<int64_t>(rng() % 3));
      args.push_back("--block-table");
      args.push_back(join(table));
    }
    const CommandResult r = layout(args);
    ASSERT_EQ(r.exit_status, 0) << r.err;
    check_json(r.out, expected, seq_len, table);
    if (HasFatalFailure()) return;
  }
}

TEST(LayoutCommand, DefaultsAndTheShortDcpFlag) {
  const CommandResult defaults = layout({"--seq-len", "37", "--json"});
  ASSERT_EQ(defaults.exit_status, 0) << defaults.err;
  check_json(defaults.out, kv::DcpLayout(1, 16, 1), 37, {});
  for (const std::vector<std::string>& dcp :
       {std::vector<std::string>{"-dcp", "3"}, std::vector<std::string>{"-dcp=3"}}) {
    std::vector<std::string> args = dcp;
    for (const char* a :
         {"--block-size", "4", "--cp-kv-cache-interleave-size", "2", "--seq-len", "29", "--json"})
      args.push_back(a);
    const CommandResult r = layout(args);
    ASSERT_EQ(r.exit_status, 0) << r.err;
    check_json(r.out, kv::DcpLayout(3, 4, 2), 29, {});
  }
}

// Human output: one row per token for short requests, whose numbers agree with the layout.
TEST(LayoutCommand, TableShowsEveryTokenOfAShortRequest) {
  const kv::DcpLayout expected(3, 4, 2);
  const std::vector<int32_t> table = {9, 2, 5};
  const CommandResult r = layout({"-dcp", "3", "--block-size", "4", "--cp-kv-cache-interleave-size",
                                  "2", "--seq-len", "31", "--block-table", "9,2,5"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  int64_t rows = 0;
  bool in_token_rows = false;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    if (line.find("local_index") != std::string::npos) {
      in_token_rows = true;
      continue;
    }
    int64_t pos = 0, slot = 0, local = 0;
    int rank = 0;
    if (!in_token_rows || !(fields >> pos >> rank >> local >> slot)) continue;
    ASSERT_EQ(pos, rows);
    EXPECT_EQ(rank, expected.owner(pos));
    EXPECT_EQ(local, expected.local_index(pos));
    EXPECT_EQ(slot, expected.slot(pos, rank, table));
    ++rows;
  }
  EXPECT_EQ(rows, 31) << r.out;

  const CommandResult summary = layout({"-dcp", "2", "--seq-len", "5000"});
  ASSERT_EQ(summary.exit_status, 0) << summary.err;
  EXPECT_NE(summary.out.find("2500"), std::string::npos) << summary.out;  // each rank's length
  EXPECT_LT(summary.out.size(), 4000u) << "a long request should be summarized";
}

TEST(LayoutCommand, InvalidArgumentsExitWithStatus2AndOneLine) {
  const std::vector<std::vector<std::string>> cases = {
      {"--decode-context-parallel-size", "0", "--seq-len", "10"},
      {"-dcp", "-2", "--seq-len", "10"},
      {"--block-size", "0", "--seq-len", "10"},
      {"--block-size", "16", "--cp-kv-cache-interleave-size", "3", "--seq-len", "10"},
      {"--block-size", "4", "--cp-kv-cache-interleave-size", "8", "--seq-len", "10"},
      {"--cp-kv-cache-interleave-size", "0", "--seq-len", "10"},
      {"--seq-len", "-1"},
      {"--seq-len", "ten"},
      {"--seq-len", "99999999999"},
      {"--block-size", "16"},  // --seq-len missing
      {"--seq-len", "10", "--no-such-flag"},
      {"-dcp", "2", "--block-size", "4", "--seq-len", "9", "--block-table", "7"},  // too short
      {"-dcp", "2", "--block-size", "4", "--seq-len", "9", "--block-table", "7,7"},
      {"-dcp", "2", "--block-size", "4", "--seq-len", "9", "--block-table", "7,-3"},
      {"-dcp", "2", "--block-size", "4", "--seq-len", "9", "--block-table", "7,x"},
  };
  for (const auto& args : cases) {
    std::string joined;
    for (const auto& a : args) joined += a + " ";
    SCOPED_TRACE(joined);
    const CommandResult r = layout(args);
    EXPECT_EQ(r.exit_status, 2) << r.out << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    ASSERT_FALSE(r.err.empty());
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.back(), '\n') << r.err;
  }
}

}  // namespace
}  // namespace ctxpar
