// The model and FP8 surface of the `ctxpar` command: `plan` on the config-only built-ins
// answers the GLM-5 capacity question (replicated index keys included), config-only entries
// are refused for runs, `--quantization fp8` runs dummy weights FP8 and the FP8 fixture runs
// under tensor parallelism, a Hugging Face repo id runs from the hub cache, --hf-overrides
// extends a context with YaRN, and bad values exit 2 naming them.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_command.h"

namespace ctxpar::app {
using test::CommandResult;
using test::run_command;
namespace {

// Token ids as --prompt-token-ids takes them: "1,2,3".
std::string id_list(const nlohmann::json& ids) {
  std::string text;
  for (const auto& id : ids) {
    if (!text.empty()) text += ',';
    text += std::to_string(id.get<int>());
  }
  return text;
}

// `generate --json` of 8 greedy f32 tokens after `prompt`, EOS ignored; then `extra`.
CommandResult greedy_json(const std::string& prompt, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"generate",     "--json",
                                   "--dtype",      "float32",
                                   "--max-tokens", "8",
                                   "--ignore-eos", "--prompt-token-ids",
                                   prompt,         "--kv-cache-memory",
                                   "16MiB"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_command(CTXPAR_BINARY, args);
}

// The output token ids of a `generate --json` run; null (and a test failure) unless it exited 0.
nlohmann::json output_tokens(const CommandResult& c) {
  EXPECT_EQ(c.exit_status, 0) << c.err;
  return c.exit_status == 0 ? nlohmann::json::parse(c.out)["requests"][0]["output_token_ids"]
                            : nlohmann::json();
}

TEST(ModelsCommand, PlanCountsTheReplicatedIndexKeysOfGlm5) {
  const CommandResult r =
      run_command(CTXPAR_BINARY, {"plan", "--model", "builtin:config/glm-5", "-tp", "16", "-dcp",
                                  "16", "--kv-cache-memory", "64GiB", "--json"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["plans"].size(), 2u);
  const auto& n1 = j["plans"][0];
  const auto& n16 = j["plans"][1];
  // 78 layers × (576 latent + 128 index key) bf16 values without DCP; with N = 16 the latent
  // is sharded (576 / 16) and the index keys are replicated.
  EXPECT_EQ(n1["kv_bytes_per_token_per_rank"], 78 * (576 + 128) * 2);
  EXPECT_EQ(n16["kv_bytes_per_token_per_rank"], 78 * (576 / 16 + 128) * 2);
  EXPECT_EQ(n16["indexer_bytes_per_token_per_rank"], 78 * 128 * 2);
  EXPECT_EQ(n16["indexer_layers"], 78);
  EXPECT_GT(n16["token_capacity"].get<int64_t>(), 4 * n1["token_capacity"].get<int64_t>());
  // GLM-5.2 keeps index keys in 21 layers only.
  const CommandResult r52 =
      run_command(CTXPAR_BINARY, {"plan", "--model", "builtin:config/glm-5.2", "-tp", "16", "-dcp",
                                  "16", "--kv-cache-memory", "64GiB", "--json"});
  ASSERT_EQ(r52.exit_status, 0) << r52.err;
  EXPECT_EQ(nlohmann::json::parse(r52.out)["plans"][1]["indexer_layers"], 21);
}

TEST(ModelsCommand, PlanHalvesTheBytesOfAnFp8CacheButNotOfTheIndexKeys) {
  const auto bytes = [](const char* model, const char* dtype) {
    const CommandResult r =
        run_command(CTXPAR_BINARY, {"plan", "--model", model, "--kv-cache-dtype", dtype, "--json"});
    EXPECT_EQ(r.exit_status, 0) << r.err;
    return nlohmann::json::parse(r.out)["plans"][0]["kv_bytes_per_token_per_rank"].get<int64_t>();
  };
  for (const char* model : {"builtin:tiny-llama", "builtin:tiny-deepseek-v2"}) {
    EXPECT_EQ(2 * bytes(model, "fp8"), bytes(model, "bfloat16")) << model;
  }
  // GLM-5: 78 layers of a 576-value latent, now one byte each, and 128 bf16 index keys.
  EXPECT_EQ(bytes("builtin:config/glm-5", "fp8"), 78 * (576 + 128 * 2));
  const CommandResult e5m2 = run_command(
      CTXPAR_BINARY, {"plan", "--model", "builtin:tiny-llama", "--kv-cache-dtype", "fp8_e5m2"});
  EXPECT_EQ(e5m2.exit_status, 2) << e5m2.err;
  EXPECT_NE(e5m2.err.find("use auto, float32, bfloat16, fp8 or fp8_e4m3"), std::string::npos)
      << e5m2.err;
}

TEST(ModelsCommand, ConfigOnlyBuiltinsAndBadQuantizationAreRefused) {
  CommandResult r = run_command(
      CTXPAR_BINARY, {"generate", "--model", "builtin:config/kimi-k2", "--prompt-token-ids", "1"});
  EXPECT_EQ(r.exit_status, 2) << r.err;
  EXPECT_NE(r.err.find("config-only"), std::string::npos) << r.err;
  r = run_command(CTXPAR_BINARY, {"generate", "--model", "builtin:tiny-llama", "--quantization",
                                  "int4", "--prompt", "x"});
  EXPECT_EQ(r.exit_status, 2) << r.err;
  EXPECT_NE(r.err.find("'int4'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fp8"), std::string::npos) << r.err;
}

TEST(ModelsCommand, Fp8RunsWithDummyWeightsAndFromTheFp8Checkpoint) {
  CommandResult r = run_command(
      CTXPAR_BINARY,
      {"generate", "--json", "--model", "builtin:tiny-glm5", "--quantization", "fp8", "--prompt",
       "sparse attention", "--max-tokens", "4", "--ignore-eos", "--kv-cache-memory", "16MiB"});
  ASSERT_EQ(r.exit_status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["requests"][0]["output_token_ids"].size(), 4u);
  const std::string fixture = std::string(CTXPAR_FIXTURES_DIR) + "/tiny-glm5-fp8-fixture";
  const auto tokens = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"generate",
                                     "--json",
                                     "--model",
                                     fixture,
                                     "--dtype",
                                     "float32",
                                     "--max-tokens",
                                     "6",
                                     "--prompt-token-ids",
                                     "3,1,4,1,5,9,2,6,5,3",
                                     "--kv-cache-memory",
                                     "16MiB"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CommandResult c = run_command(CTXPAR_BINARY, args);
    EXPECT_EQ(c.exit_status, 0) << c.err;
    return nlohmann::json::parse(c.out)["requests"][0]["output_token_ids"];
  };
  const auto one = tokens({});
  EXPECT_EQ(tokens({"-tp", "2"}), one);
  EXPECT_EQ(tokens({"-tp", "2", "-dcp", "2"}), one);
  r = run_command(CTXPAR_BINARY,
                  {"generate", "--model", fixture, "-tp", "4", "--prompt-token-ids", "1,2"});
  EXPECT_EQ(r.exit_status, 2) << r.err;
  EXPECT_NE(r.err.find("part counts that cut on blocks: 1, 2"), std::string::npos) << r.err;
}

// A compressed-tensors FP8 checkpoint (per-tensor and per-channel scales) generates
// transformers' greedy tokens, with T = 1 and 2 and with --quantization naming its method;
// naming another method is vLLM's mismatch error.
TEST(ModelsCommand, CompressedTensorsFp8CheckpointGeneratesTransformersGreedyTokens) {
  const std::string fixture = std::string(CTXPAR_FIXTURES_DIR) + "/tiny-qwen3-fp8-fixture";
  std::ifstream in(fixture + "/golden.json");
  const auto golden = nlohmann::json::parse(in);
  const std::string prompt = id_list(golden["prompts"][2]);
  const auto tokens = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"--model", fixture};
    args.insert(args.end(), extra.begin(), extra.end());
    return output_tokens(greedy_json(prompt, args));
  };
  EXPECT_EQ(tokens({}), golden["greedy"][2]);
  EXPECT_EQ(tokens({"-tp", "2", "--quantization", "compressed-tensors"}), golden["greedy"][2]);
  const CommandResult r = run_command(
      CTXPAR_BINARY,
      {"generate", "--model", fixture, "--quantization", "fp8", "--prompt-token-ids", "1,2"});
  EXPECT_EQ(r.exit_status, 2) << r.err;
  EXPECT_NE(r.err.find("model config (compressed-tensors) does not match"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("`quantization` argument (fp8)"), std::string::npos) << r.err;
}

// `ctxpar generate --model OWNER/NAME` as vLLM takes it: the compressed-tensors fixture laid out
// in a Hugging Face hub cache as huggingface_hub writes it (refs/main naming a snapshot of
// symlinks), found through HF_HUB_CACHE or --download-dir, at --revision, gives transformers'
// greedy tokens; a repo id not in the cache exits 2 saying how to download it.
TEST(ModelsCommand, RepoIdsRunFromTheHuggingFaceCache) {
  namespace fs = std::filesystem;
  const fs::path fixture = fs::path(CTXPAR_FIXTURES_DIR) / "tiny-qwen3-fp8-fixture";
  std::string pattern = (fs::temp_directory_path() / "ctxpar_hf_cache_XXXXXX").string();
  ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
  const fs::path cache = pattern;
  const std::string commit = "5c4b8e2f0d9a7b6c5e4f3a2b1c0d9e8f7a6b5c4d";
  const fs::path repo = cache / "models--RedHatAI--tiny-qwen3-fp8";
  fs::create_directories(repo / "refs");
  std::ofstream(repo / "refs" / "main") << commit;
  std::ofstream(repo / "refs" / "v1") << commit;
  fs::create_directories(repo / "snapshots" / commit);
  for (const auto& f : fs::directory_iterator(fixture))
    fs::create_symlink(f.path(), repo / "snapshots" / commit / f.path().filename());

  std::ifstream in(fixture / "golden.json");
  const auto golden = nlohmann::json::parse(in);
  const std::string prompt = id_list(golden["prompts"][1]);
  const auto run = [&](const std::vector<std::string>& extra) {
    return greedy_json(prompt, extra);
  };
  EXPECT_EQ(
      output_tokens(run({"--model", "RedHatAI/tiny-qwen3-fp8", "--download-dir", cache.string()})),
      golden["greedy"][1]);
  ::setenv("HF_HUB_CACHE", cache.c_str(), 1);
  EXPECT_EQ(output_tokens(run({"--model", "RedHatAI/tiny-qwen3-fp8", "--revision", "v1"})),
            golden["greedy"][1]);
  const CommandResult missing = run({"--model", "RedHatAI/tiny-qwen3-fp9"});
  ::unsetenv("HF_HUB_CACHE");
  EXPECT_EQ(missing.exit_status, 2) << missing.err;
  EXPECT_NE(missing.err.find("hf download RedHatAI/tiny-qwen3-fp9"), std::string::npos)
      << missing.err;
  fs::remove_all(cache);
}

// vLLM's --hf-overrides as Qwen's YaRN recipe gives it: the Qwen3 fixture (256 positions) runs
// a 300-token prompt at --max-model-len 512 with a YaRN rope_scaling of factor 2, the same
// tokens at T = 1 and 2; without it the length is refused with a message naming the flag.
TEST(ModelsCommand, HfOverridesExtendTheContextWithYarn) {
  const std::string fixture = std::string(CTXPAR_FIXTURES_DIR) + "/tiny-qwen3-fixture";
  std::string prompt;
  for (int i = 0; i < 300; ++i) {
    if (i > 0) prompt += ',';
    prompt += std::to_string(1 + (i * 37) % 150);
  }
  const std::string yarn = R"({"rope_scaling": {"rope_type": "yarn", "factor": 2.0,)"
                           R"( "original_max_position_embeddings": 256}})";
  const auto run = [&](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"--model", fixture, "--max-model-len", "512"};
    args.insert(args.end(), extra.begin(), extra.end());
    return greedy_json(prompt, args);
  };
  const CommandResult refused = run({});
  EXPECT_EQ(refused.exit_status, 2);
  EXPECT_NE(refused.err.find("exceeds the 256 tokens the model supports"), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("--hf-overrides"), std::string::npos) << refused.err;
  const nlohmann::json one = output_tokens(run({"--hf-overrides", yarn}));
  EXPECT_EQ(one.size(), 8u);
  EXPECT_EQ(output_tokens(run({"--hf-overrides", yarn, "-tp", "2"})), one);
}

}  // namespace
}  // namespace ctxpar::app
