// `ctxpar generate` as a user runs it: JSON output, the same tokens with and without DCP,
// the same under mpirun as with in-process ranks, and one-line errors with exit status 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "run_command.h"

namespace ctxpar::app {
using test::CommandResult;
using test::run_command;
namespace {

nlohmann::json run_json(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"generate",          "--json", "--max-model-len", "128",
                                  "--kv-cache-memory", "16MiB"};
  all.insert(all.end(), args.begin(), args.end());
  const CommandResult r = run_command(CTXPAR_BINARY, all);
  EXPECT_EQ(r.exit_status, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

TEST(GenerateCommand, JsonHasTokensKvAndTiming) {
  const auto j =
      run_json({"--model", "builtin:tiny-qwen2", "-tp", "2", "-dcp", "2", "--prompt", "hello",
                "--prompt-token-ids", "5,6,7", "--max-tokens", "5", "--ignore-eos"});
  ASSERT_EQ(j["requests"].size(), 2u);
  EXPECT_EQ(j["requests"][1]["prompt_token_ids"], nlohmann::json({5, 6, 7}));
  for (const auto& r : j["requests"]) EXPECT_EQ(r["output_token_ids"].size(), 5u);
  EXPECT_EQ(j["kv"]["token_capacity"].get<int64_t>(),
            2 * j["kv"]["token_capacity_without_dcp"].get<int64_t>());
  EXPECT_GT(j["kv"]["bytes_per_rank"].get<int64_t>(), 0);
  EXPECT_GT(j["timing"]["steps"].get<int64_t>(), 0);
}

TEST(GenerateCommand, DcpGivesTheSameTokensAsOneRank) {
  const std::vector<std::string> prompt = {"--model",      "builtin:tiny-deepseek-v2",
                                           "--prompt",     "context parallel",
                                           "--max-tokens", "8",
                                           "--ignore-eos"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), prompt.begin(), prompt.end());
    return run_json(extra)["requests"][0]["output_token_ids"];
  };
  const auto reference = with({});
  EXPECT_EQ(with({"-tp", "4", "-dcp", "4", "--cp-kv-cache-interleave-size", "2"}), reference);
  EXPECT_EQ(with({"-tp", "2", "-dcp", "2", "--dcp-comm-backend", "a2a", "--block-size", "1"}),
            reference);
}

TEST(GenerateCommand, MpiRanksMatchInProcessRanksForEveryBuiltin) {
  const std::vector<std::pair<std::string, std::string>> models = {
      {"builtin:tiny-llama", "2"},
      {"builtin:tiny-qwen2", "4"},
      {"builtin:tiny-deepseek-v2", "2"},
      {"builtin:tiny-deepseek-v3", "4"}};
  for (const auto& [model, dcp] : models) {
    SCOPED_TRACE(model);
    const std::vector<std::string> args = {"generate",
                                           "--json",
                                           "--max-model-len",
                                           "128",
                                           "--kv-cache-memory",
                                           "16MiB",
                                           "--model",
                                           model,
                                           "-tp",
                                           "4",
                                           "-dcp",
                                           dcp,
                                           "--prompt",
                                           "mpi ranks",
                                           "--prompt",
                                           "and a second, longer prompt",
                                           "--max-tokens",
                                           "6",
                                           "--ignore-eos"};
    const CommandResult local = run_command(CTXPAR_BINARY, args);
    ASSERT_EQ(local.exit_status, 0) << local.err;
    std::vector<std::string> mpi = {"-np", "4", "--oversubscribe", "--allow-run-as-root",
                                    CTXPAR_BINARY};
    mpi.insert(mpi.end(), args.begin(), args.end());
    mpi.push_back("--distributed-executor-backend");
    mpi.push_back("mpi");
    const CommandResult r = run_command(MPIEXEC_BINARY, mpi);
    ASSERT_EQ(r.exit_status, 0) << r.err;
    const auto got = nlohmann::json::parse(r.out)["requests"];
    const auto want = nlohmann::json::parse(local.out)["requests"];
    ASSERT_EQ(got.size(), 2u);
    for (size_t i = 0; i < 2; ++i)
      EXPECT_EQ(got[i]["output_token_ids"], want[i]["output_token_ids"]);
  }
}

// Each invalid invocation exits 2 with exactly one line on stderr that names the problem (and
// no source location: that is for internal errors, which exit 3).
TEST(GenerateCommand, InvalidInvocationsExitTwoWithOneLine) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"-tp", "4", "-dcp", "3"}, "divide"},
      {{"--block-size", "16", "--cp-kv-cache-interleave-size", "3"}, "interleave"},
      {{"--model", "builtin:tiny-llama", "-tp", "2", "-dcp", "2"}, "num_key_value_heads"},
      {{"--kv-cache-memory", "4KiB"}, "--kv-cache-memory"},
      {{"--dcp-comm-backend", "nccl"}, "ag_rs"},
      {{"--model", "builtin:nope"}, "builtin"},
      {{"--additional-config", "{\"x\": 1}"}, "x"},
      {{"--max-model-len", "100000"}, "max_position_embeddings"},
      {{"--prompt-token-ids", "1,999999"}, "vocabulary"},
  };
  for (const auto& [extra, needle] : cases) {
    std::vector<std::string> args = {"generate", "--prompt", "hi", "--max-model-len", "128"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CommandResult r = run_command(CTXPAR_BINARY, args);
    EXPECT_EQ(r.exit_status, 2) << needle << ": " << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.find("[ctxpar/"), std::string::npos)
        << "a message about the user's input names no source location: " << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

// A pasted `vllm serve`/`generate` line runs: vLLM's GPU-only flags are accepted and named once
// as ignored, --kv-cache-memory-bytes is --kv-cache-memory; a flag neither knows is an error.
TEST(GenerateCommand, VllmGpuOnlyFlagsAreNamedAsIgnored) {
  const std::vector<std::string> base = {
      "generate", "--prompt-token-ids", "1,2,3", "--max-tokens", "2", "--json"};
  std::vector<std::string> args = base;
  for (const char* a : {"--gpu-memory-utilization",
                        "0.9",
                        "--enforce-eager",
                        "--trust-remote-code",
                        "--kv-cache-memory-bytes",
                        "8388608",
                        "--uvicorn-log-level",
                        "warning",
                        "--disable-log-requests",
                        "--enable-expert-parallel",
                        "-pp",
                        "1",
                        "-dp",
                        "1",
                        "--enable-chunked-prefill",
                        "--async-scheduling",
                        "--log-error-stack",
                        "--h11-max-header-count",
                        "64",
                        "--root-path",
                        "/api",
                        "--speculative-config.method",
                        "mtp",
                        "--speculative-config.num_speculative_tokens=1",
                        "--limit-mm-per-prompt",
                        R"({"image": 0})",
                        "--disable-cascade-attn",
                        "--hf-token",
                        "hf_secret123",
                        "--scheduling-policy",
                        "fcfs",
                        "--logprobs-mode",
                        "raw_logprobs",
                        "--cohere-format",
                        "cmd3",
                        "--enable-offline-docs"}) {
    args.push_back(a);
  }
  const CommandResult r = run_command(CTXPAR_BINARY, args);
  ASSERT_EQ(r.exit_status, 0) << r.err;
  for (const char* line :
       {"ignoring vLLM's GPU-only flags: --gpu-memory-utilization 0.9, --enforce-eager, "
        "--trust-remote-code",
        "ignoring vLLM's logging flags: ", "--uvicorn-log-level warning", "--disable-log-requests",
        "--enable-expert-parallel: experts are split by tensor parallelism", "--async-scheduling",
        "--log-error-stack",
        "ignoring vLLM's uvicorn flags: --h11-max-header-count 64, --root-path /api (ctxpar's "
        "HTTP server has its own; the request body limit is --max-request-body-bytes)",
        // vLLM's dotted keys of a config flag arrive merged into its JSON, as vLLM merges them.
        "ignoring vLLM's speculative decoding flags: --speculative-config "
        R"({"method":"mtp","num_speculative_tokens":1} (ctxpar decodes a token a step)",
        "ignoring vLLM's multimodal flags: --limit-mm-per-prompt {\"image\": 0} (ctxpar serves "
        "text-only models)",
        "--disable-cascade-attn",
        "ignoring vLLM's Hugging Face Hub flags: --hf-token (value not shown) (ctxpar reads "
        "models from the local Hugging Face cache)",
        "ignoring vLLM's Cohere API flags: --cohere-format cmd3 (ctxpar does not serve vLLM's "
        "/cohere routes)",
        "--enable-offline-docs"})
    EXPECT_NE(r.err.find(line), std::string::npos) << line << " in: " << r.err;
  EXPECT_EQ(r.err.find("hf_secret123"), std::string::npos) << "the token is printed: " << r.err;
  const CommandResult plain = run_command(CTXPAR_BINARY, base);
  ASSERT_EQ(plain.exit_status, 0) << plain.err;
  EXPECT_EQ(plain.err.find("ignoring"), std::string::npos) << plain.err;
  const auto json = nlohmann::json::parse(r.out), plain_json = nlohmann::json::parse(plain.out);
  EXPECT_EQ(json["requests"], plain_json["requests"]);
  EXPECT_LT(json["kv"]["bytes_per_rank"].get<int64_t>(),
            plain_json["kv"]["bytes_per_rank"].get<int64_t>())
      << "--kv-cache-memory-bytes sized the cache";

  // vLLM's other scheduling policy and logprobs modes: ctxpar has one of each.
  for (const auto& [flag, value] : {std::pair{"--scheduling-policy", "priority"},
                                    std::pair{"--logprobs-mode", "processed_logprobs"}}) {
    args = base;
    args.insert(args.end(), {flag, value});
    const CommandResult other = run_command(CTXPAR_BINARY, args);
    EXPECT_EQ(other.exit_status, 2) << flag;
    EXPECT_NE(other.err.find(std::string(flag) + ": " + value + " not in"), std::string::npos)
        << other.err;
  }

  // Flags for what ctxpar does not do stop it with why (values and all), not "not expected".
  for (const auto& [given, why] :
       {std::pair<std::vector<std::string>, std::string>{{"--enable-lora"}, "LoRA adapters"},
        {{"--lora-modules", "a=/x", "b=/y"}, "merge the adapter into the checkpoint"},
        {{"--max-lora-rank", "64"}, "without LoRA adapters"},
        {{"--uds", "/tmp/s"}, "TCP only"},
        {{"--kv-transfer-config", "{}"}, "disaggregated prefill"},
        {{"--middleware", "m.f"}, "Python middleware"},
        {{"--tool-server", "demo"}, "clients run their tools"},
        {{"--tokens-only"}, "token-in / token-out"}}) {
    args = base;
    args.insert(args.end(), given.begin(), given.end());
    const CommandResult refused = run_command(CTXPAR_BINARY, args);
    EXPECT_NE(refused.exit_status, 0) << given[0];
    EXPECT_NE(refused.err.find(given[0] + ": ctxpar"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find(why), std::string::npos) << refused.err;
    EXPECT_EQ(refused.err.find("not expected"), std::string::npos) << refused.err;
  }

  args = base;
  args.push_back("--speculative-config.method");  // a dotted key needs its value
  const CommandResult no_value = run_command(CTXPAR_BINARY, args);
  EXPECT_NE(no_value.exit_status, 0);
  EXPECT_NE(no_value.err.find("--speculative-config.method needs a value"), std::string::npos)
      << no_value.err;

  args = base;
  args.push_back("--gpu-memory-fraction");
  const CommandResult bad = run_command(CTXPAR_BINARY, args);
  EXPECT_EQ(bad.exit_status, 2);
  EXPECT_NE(bad.err.find("--gpu-memory-fraction"), std::string::npos) << bad.err;
}

// vLLM's -pp and -dp run at 1 only and say what ctxpar uses instead; --no-enable-chunked-prefill
// prefills a prompt longer than the default budget in one step (its budget grows to
// max_model_len, as vLLM's) with the same tokens, and refuses a budget below max_model_len.
TEST(GenerateCommand, ParallelSizesAndChunkedPrefillAsVllmTakesThem) {
  std::string prompt;
  for (int i = 0; i < 600; ++i) {
    if (i > 0) prompt += ',';
    prompt += std::to_string(1 + i % 200);
  }
  const std::vector<std::string> base = {"generate",           "--json", "--max-tokens",    "3",
                                         "--max-num-seqs",     "4",      "--max-model-len", "1024",
                                         "--prompt-token-ids", prompt};
  const auto run = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_command(CTXPAR_BINARY, args);
  };
  const CommandResult chunked = run({"--max-num-batched-tokens", "256"});
  const CommandResult whole = run({"--no-enable-chunked-prefill"});
  ASSERT_EQ(chunked.exit_status, 0) << chunked.err;
  ASSERT_EQ(whole.exit_status, 0) << whole.err;
  const auto a = nlohmann::json::parse(chunked.out), b = nlohmann::json::parse(whole.out);
  EXPECT_EQ(a["requests"], b["requests"]);
  // 600 prompt tokens: three prefill steps of at most 256, or one; then the decodes.
  EXPECT_EQ(a["timing"]["steps"].get<int>() - b["timing"]["steps"].get<int>(), 2);
  const CommandResult small =
      run({"--no-enable-chunked-prefill", "--max-num-batched-tokens", "512"});
  EXPECT_EQ(small.exit_status, 2);
  EXPECT_NE(small.err.find("max_num_batched_tokens (512) is smaller than max_model_len (1024)"),
            std::string::npos)
      << small.err;
  for (const auto& [flag, says] : std::vector<std::pair<std::string, std::string>>{
           {"-pp", "--pipeline-parallel-size 2: ctxpar has no pipeline parallelism"},
           {"--data-parallel-size", "--data-parallel-size 2: ctxpar runs one engine per server"}}) {
    const CommandResult r = run({flag, "2"});
    EXPECT_EQ(r.exit_status, 2) << flag;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
  }
}

// A prompts-file id is range-checked before it is narrowed to int32: 2^32 + 1 must not run as
// token 1. Ids in range run; every out-of-range form is a usage error naming the value.
TEST(GenerateCommand, PromptsFileIdsAreCheckedBeforeNarrowing) {
  const std::string path =
      ::testing::TempDir() + "/ctxpar_prompts_" + std::to_string(std::random_device{}()) + ".jsonl";
  auto run_file = [&](const std::string& line) {
    std::ofstream(path) << line << "\n";
    return run_command(CTXPAR_BINARY, {"generate", "--prompts-file", path, "--max-tokens", "2",
                                       "--max-model-len", "128", "--kv-cache-memory", "16MiB"});
  };
  const CommandResult ok = run_file(R"({"prompt_token_ids": [1, 2]})");
  EXPECT_EQ(ok.exit_status, 0) << ok.err;
  for (const std::string bad : {"4294967297", "2147483648", "-1", "18446744073709551615", "1.5"}) {
    SCOPED_TRACE(bad);
    const CommandResult r = run_file(R"({"prompt_token_ids": [)" + bad + ", 2]}");
    EXPECT_EQ(r.exit_status, 2) << r.err;
    EXPECT_NE(r.err.find("token id " + bad), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  std::remove(path.c_str());
}

TEST(GenerateCommand, PromptLongerThanMaxModelLenExitsTwoBeforeRunning) {
  const CommandResult r =
      run_command(CTXPAR_BINARY, {"generate", "--model", "builtin:tiny-llama", "--max-model-len",
                                  "128", "--prompt", "short", "--prompt", std::string(200, 'a')});
  EXPECT_EQ(r.exit_status, 2);
  EXPECT_NE(r.err.find("prompt 1 has 201 tokens"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.out.empty());
}

TEST(GenerateCommand, StopTokenEndsTheRequest) {
  const auto free_run = run_json({"--model", "builtin:tiny-llama", "--prompt", "stop here",
                                  "--max-tokens", "8", "--ignore-eos"});
  const auto tokens = free_run["requests"][0]["output_token_ids"];
  const int stop = tokens[2].get<int>();
  const auto stopped =
      run_json({"--model", "builtin:tiny-llama", "--prompt", "stop here", "--max-tokens", "8",
                "--ignore-eos", "--stop-token-ids", std::to_string(stop)});
  const auto& out = stopped["requests"][0];
  EXPECT_EQ(out["finish_reason"], "stop");
  ASSERT_LE(out["output_token_ids"].size(), 3u);
  EXPECT_EQ(out["output_token_ids"].back().get<int>(), stop);
}

}  // namespace
}  // namespace ctxpar::app

namespace ctxpar::app {
namespace {

TEST(VerifyCommand, AgreesOnDcpAndExitsOneOnAMismatch) {
  const std::vector<std::string> base = {"verify",
                                         "--model",
                                         "builtin:tiny-deepseek-v3",
                                         "-tp",
                                         "2",
                                         "-dcp",
                                         "2",
                                         "--prompt",
                                         "verify",
                                         "--max-tokens",
                                         "4",
                                         "--max-model-len",
                                         "128",
                                         "--kv-cache-memory",
                                         "16MiB"};
  const CommandResult ok = run_command(CTXPAR_BINARY, base);
  EXPECT_EQ(ok.exit_status, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("all tokens agree"), std::string::npos) << ok.out;
  // A zero tolerance turns float rounding differences between T=2 and T=1 into mismatches.
  std::vector<std::string> strict = base;
  strict.insert(strict.end(), {"--tolerance", "0"});
  const CommandResult bad = run_command(CTXPAR_BINARY, strict);
  EXPECT_EQ(bad.exit_status, 1) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("MISMATCH"), std::string::npos) << bad.out;
}

TEST(PlanCommand, DcpDividesPerTokenBytesAndMultipliesCapacity) {
  const CommandResult r = run_command(
      CTXPAR_BINARY, {"plan", "--model", "builtin:tiny-deepseek-v3", "--tensor-parallel-size", "4",
                      "--decode-context-parallel-size", "4", "--kv-cache-memory", "1GiB",
                      "--max-model-len", "4096", "--json"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["plans"].size(), 2u);
  const auto& n1 = j["plans"][0];
  const auto& n4 = j["plans"][1];
  EXPECT_EQ(n1["kv_bytes_per_token_per_rank"].get<int64_t>(),
            4 * n4["kv_bytes_per_token_per_rank"].get<int64_t>());
  EXPECT_EQ(4 * n1["token_capacity"].get<int64_t>(), n4["token_capacity"].get<int64_t>());
  EXPECT_GE(n4["max_concurrent_requests"].get<int64_t>(),
            4 * n1["max_concurrent_requests"].get<int64_t>());
  const CommandResult bad =
      run_command(CTXPAR_BINARY, {"plan", "--model", "builtin:tiny-llama", "--tensor-parallel-size",
                                  "2", "--decode-context-parallel-size", "2"});
  EXPECT_EQ(bad.exit_status, 2);
}

}  // namespace
}  // namespace ctxpar::app
