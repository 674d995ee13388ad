// `ctxpar generate` with the DSA-CP flags as a user runs them: --prefill-only runs the prefill
// role alone (one token per request, sampled from the prefill, no decode step) and reports
// prefill throughput; DSA-CP and flashcomm1 (--additional-config or the environment) give the
// tokens of the plain run; an impossible combination is a one-line error, exit status 2.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/run_command.h"

namespace ctxpar::app {
using test::CommandResult;
using test::run_command;
namespace {

const std::vector<std::string> kPrompts = {"--model",
                                           "builtin:tiny-deepseek-v32",
                                           "--prompt",
                                           "decode context parallel, sparse",
                                           "--prompt-token-ids",
                                           "7,8,9,10,11",
                                           "--prompt",
                                           "a second prompt of another length",
                                           "--max-num-batched-tokens",
                                           "64",
                                           "--max-num-seqs",
                                           "8",
                                           "--ignore-eos"};

nlohmann::json run_json(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"generate",          "--json", "--max-model-len", "256",
                                  "--kv-cache-memory", "16MiB"};
  all.insert(all.end(), kPrompts.begin(), kPrompts.end());
  all.insert(all.end(), args.begin(), args.end());
  const CommandResult r = run_command(CTXPAR_BINARY, all);
  EXPECT_EQ(r.exit_status, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

std::vector<std::vector<int>> tokens_of(const nlohmann::json& j) {
  std::vector<std::vector<int>> out;
  for (const auto& r : j["requests"]) out.push_back(r["output_token_ids"].get<std::vector<int>>());
  return out;
}

TEST(DsaCpCli, PrefillOnlyStopsAtTheFirstTokenOfEveryRequest) {
  const auto full = tokens_of(run_json({"--max-tokens", "4"}));
  for (const std::vector<std::string>& parallel :
       {std::vector<std::string>{"-tp", "2", "--additional-config", R"({"enable_dsa_cp": true})"},
        std::vector<std::string>{"-tp", "4", "-dcp", "4", "--cp-kv-cache-interleave-size", "16",
                                 "--additional-config",
                                 R"({"enable_dsa_cp": true, "enable_flashcomm1": true})"}}) {
    std::vector<std::string> args = parallel;
    args.insert(args.end(), {"--prefill-only", "--max-tokens", "4"});
    const nlohmann::json j = run_json(args);
    const auto got = tokens_of(j);
    ASSERT_EQ(got.size(), full.size());
    int64_t prompt_tokens = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].size(), 1u) << "request " << i;
      EXPECT_EQ(got[i][0], full[i][0]) << "request " << i << ": the prefill's token";
      prompt_tokens += static_cast<int64_t>(j["requests"][i]["prompt_token_ids"].size());
    }
    const auto& timing = j["timing"];
    EXPECT_TRUE(timing["prefill_only"].get<bool>());
    EXPECT_EQ(timing["prefill_tokens"].get<int64_t>(), prompt_tokens);
    EXPECT_GT(timing["prefill_tokens_per_second"].get<double>(), 0);
    EXPECT_EQ(timing["decode_seconds"].get<double>(), 0) << "no decode-only step ran";
  }
  // The text form reports the prefill throughput.
  std::vector<std::string> text = {"generate", "--prefill-only",      "-tp",
                                   "2",        "--additional-config", R"({"enable_dsa_cp": true})"};
  text.insert(text.end(), kPrompts.begin(), kPrompts.end());
  const CommandResult r = run_command(CTXPAR_BINARY, text);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_NE(r.out.find("Prefill-only:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tok/s"), std::string::npos) << r.out;
}

TEST(DsaCpCli, DsaCpAndFlashcomm1KeepTheTokens) {
  const auto want = tokens_of(run_json({"--max-tokens", "6"}));
  EXPECT_EQ(tokens_of(run_json({"--max-tokens", "6", "-tp", "4", "-dcp", "4", "--additional-config",
                                R"({"enable_dsa_cp": true})"})),
            want);
  ::setenv("VLLM_ASCEND_ENABLE_FLASHCOMM1", "1", 1);
  const auto with_env = tokens_of(run_json(
      {"--max-tokens", "6", "-tp", "2", "--additional-config", R"({"enable_dsa_cp": true})"}));
  ::unsetenv("VLLM_ASCEND_ENABLE_FLASHCOMM1");
  EXPECT_EQ(with_env, want);
}

TEST(DsaCpCli, ImpossibleCombinationsExitWithTheRule) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--model", "builtin:tiny-llama", "-tp", "2", "--additional-config",
        R"({"enable_dsa_cp": true})"},
       "enable_dsa_cp"},
      {{"--model", "builtin:tiny-deepseek-v32", "-tp", "4", "-dcp", "2", "--additional-config",
        R"({"enable_dsa_cp": true})"},
       "N == T"},
      {{"--model", "builtin:tiny-qwen2", "--additional-config", R"({"o_proj_quant": "int8"})"},
       "o_proj_quant"}};
  for (const auto& [args, rule] : cases) {
    std::vector<std::string> all = {"generate", "--prompt", "x"};
    all.insert(all.end(), args.begin(), args.end());
    const CommandResult r = run_command(CTXPAR_BINARY, all);
    EXPECT_EQ(r.exit_status, 2) << r.err;
    EXPECT_NE(r.err.find(rule), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
}

}  // namespace
}  // namespace ctxpar::app
