// Multi-turn conversations through the online engine with and without prefix caching: turn 0
// is a `prefix`-token prompt; each later turn's prompt is the previous prompt, its answer
// (kAnswer greedy tokens) and a new user message (kMessage tokens), as a chat client resends
// the whole conversation. builtin:tiny-qwen2 with dummy weights (f32, its
// max_position_embeddings raised to hold the longest conversation) on T = N in-process ranks
// (N = 1: no DCP; N = 2: the KV sharded over two ranks, virtual blocks of B·N = 32).
//
// Reported per benchmark (rank 0's wall time from adding a request to its first token):
//   ttft_first_s      turn 0, the whole prompt computed (the same with and without the cache)
//   ttft_cached_s     the later turns, mean, with the cache: their prefix comes from it
//   ttft_recompute_s  the same turns' prompts without the cache: each recomputed whole
//   speedup           ttft_recompute_s / ttft_cached_s, the recompute being the ceiling
//                     measured in the same run (goal at a 16K prefix: >= 10)
//   hit_rate          vllm:prefix_cache_hits / vllm:prefix_cache_queries of the cached run
//   same_tokens       1 when every turn's answer is the same with and without the cache
//
// Run: build/bench/prefix_cache/prefix_cache_bench [--benchmark_filter=prefix:16384/]
// The default list goes up to 32K-token prefixes; on a small machine filter to prefix:4096/ first.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "ctxpar/engine/online_engine.h"
#include "ctxpar/model/builtin_configs.h"

namespace ctxpar {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kAnswer = 16;
constexpr int64_t kMessage = 256;
constexpr int kTurns = 3;
constexpr int64_t kLongestPrefix = 32768;

// tiny-qwen2's config.json with room for the longest conversation, written once.
std::string model_path() {
  static const std::string path = [] {
    std::string json;
    for (const model::BuiltinConfig& b : model::builtin_configs()) {
      if (b.name == "tiny-qwen2") json = b.json;
    }
    nlohmann::json config = nlohmann::json::parse(json);
    config["max_position_embeddings"] = kLongestPrefix + kTurns * (kAnswer + kMessage) + 64;
    const auto dir = std::filesystem::temp_directory_path() / "ctxpar_prefix_cache_bench";
    std::filesystem::create_directories(dir);
    const auto file = dir / "config.json";
    std::ofstream(file) << config.dump(2);
    return file.string();
  }();
  return path;
}

engine::EngineConfig bench_config(int dcp, bool caching) {
  engine::EngineConfig c;
  c.model = model_path();
  c.load_format = "dummy";
  c.dtype = "float32";
  c.tensor_parallel_size = dcp;
  c.decode_context_parallel_size = dcp;
  c.block_size = 16;
  c.max_model_len = kLongestPrefix + kTurns * (kAnswer + kMessage) + 64;
  c.max_num_batched_tokens = 8192;  // chunked prefill, as a serving deployment would
  c.max_num_seqs = 4;
  c.kv_cache_memory = int64_t{256} << 20;
  c.enable_prefix_caching = caching;
  return c;
}

struct Turns {
  std::vector<std::vector<int32_t>> prompts;  // per turn
  std::vector<std::vector<int32_t>> answers;  // per turn
  std::vector<double> ttft_s;                 // per turn
  engine::PrefixCacheStats cache;
};

// Runs one request on a loaded engine and waits for it; returns its answer and TTFT.
std::pair<std::vector<int32_t>, double> ask(engine::OnlineEngine& engine, const std::string& id,
                                            std::vector<int32_t> prompt) {
  engine::EngineRequest r;
  r.id = id;
  r.prompt_token_ids = std::move(prompt);
  r.params.temperature = 0;
  r.params.max_tokens = kAnswer;
  r.params.ignore_eos = true;
  auto first = std::make_shared<std::promise<Clock::time_point>>();
  auto done = std::make_shared<std::promise<std::vector<int32_t>>>();
  auto tokens = std::make_shared<std::vector<int32_t>>();
  const Clock::time_point start = Clock::now();
  // Called on the engine thread, in order; the first output carries the first token (or ends
  // a failed request).
  engine.add_request(std::move(r), [first, done, tokens](engine::RequestOutput out) {
    if (tokens->empty()) first->set_value(Clock::now());
    tokens->insert(tokens->end(), out.token_ids.begin(), out.token_ids.end());
    if (out.finished()) done->set_value(*tokens);
  });
  const double ttft = std::chrono::duration<double>(first->get_future().get() - start).count();
  return {done->get_future().get(), ttft};
}

// A conversation: messages[t] is appended to the prompt (and the previous answer) for turn t.
Turns converse(const engine::EngineConfig& config,
               const std::vector<std::vector<int32_t>>& messages) {
  Turns turns;
  engine::run_online_engine(config, [&](engine::OnlineEngine& engine) {
    engine.wait_until_loaded();
    std::vector<int32_t> prompt;
    for (size_t t = 0; t < messages.size(); ++t) {
      prompt.insert(prompt.end(), messages[t].begin(), messages[t].end());
      turns.prompts.push_back(prompt);
      auto [answer, ttft] = ask(engine, "turn-" + std::to_string(t), prompt);
      prompt.insert(prompt.end(), answer.begin(), answer.end());
      turns.answers.push_back(std::move(answer));
      turns.ttft_s.push_back(ttft);
    }
    turns.cache = engine.stats().prefix_cache;
  });
  return turns;
}

// The same prompts one at a time without the cache, from turn 1 (turn 0 is computed whole in
// both runs): every turn recomputes the whole conversation.
Turns recompute(const engine::EngineConfig& config, const Turns& conversation) {
  Turns turns;
  engine::run_online_engine(config, [&](engine::OnlineEngine& engine) {
    engine.wait_until_loaded();
    for (size_t t = 1; t < conversation.prompts.size(); ++t) {
      auto [answer, ttft] = ask(engine, "turn-" + std::to_string(t), conversation.prompts[t]);
      turns.answers.push_back(std::move(answer));
      turns.ttft_s.push_back(ttft);
    }
  });
  return turns;
}

void BM_MultiTurnTtft(benchmark::State& state) {
  const int64_t prefix = state.range(0);
  const auto dcp = static_cast<int>(state.range(1));
  std::mt19937 rng(static_cast<uint32_t>(prefix));
  const auto random_tokens = [&](int64_t n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (int32_t& x : t) x = static_cast<int32_t>(rng() % 512);
    return t;
  };
  std::vector<std::vector<int32_t>> messages = {random_tokens(prefix)};
  for (int t = 1; t < kTurns; ++t) messages.push_back(random_tokens(kMessage));

  Turns cached, recomputed;
  for (auto _ : state) {
    cached = converse(bench_config(dcp, true), messages);
    recomputed = recompute(bench_config(dcp, false), cached);
  }
  double cached_s = 0, recompute_s = 0;
  for (int t = 1; t < kTurns; ++t) {
    cached_s += cached.ttft_s[static_cast<size_t>(t)] / (kTurns - 1);
    recompute_s += recomputed.ttft_s[static_cast<size_t>(t - 1)] / (kTurns - 1);
  }
  state.counters["ttft_first_s"] = cached.ttft_s[0];
  state.counters["ttft_cached_s"] = cached_s;
  state.counters["ttft_recompute_s"] = recompute_s;
  state.counters["speedup"] = recompute_s / cached_s;
  state.counters["hit_rate"] =
      static_cast<double>(cached.cache.hits) / static_cast<double>(cached.cache.queries);
  state.counters["same_tokens"] = std::equal(cached.answers.begin() + 1, cached.answers.end(),
                                             recomputed.answers.begin(), recomputed.answers.end())
                                      ? 1
                                      : 0;
}

BENCHMARK(BM_MultiTurnTtft)
    ->ArgNames({"prefix", "dcp"})
    ->ArgsProduct({{4096, 8192, 16384, 32768}, {1, 2}})
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace
}  // namespace ctxpar

BENCHMARK_MAIN();
