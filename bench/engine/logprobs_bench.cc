// Logprobs of one row of logits at a Llama-3 vocabulary (128,256): the per-token cost of
// logprobs on decode and, once per prompt token, of prompt_logprobs (lm-eval's loglikelihood
// requests): Time is per row. Beside it, a plain sum over the row, measured in the same run:
// what one pass that reads the row costs.
#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "ctxpar/core/cpu_features.h"
#include "ctxpar/engine/logprobs.h"

namespace {

constexpr int64_t kVocab = 128256;

std::vector<float> random_row() {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::vector<float> row(kVocab);
  for (float& x : row) x = normal(rng);
  return row;
}

void BM_RowSum(benchmark::State& state) {
  const std::vector<float> row = random_row();
  for (auto _ : state) {
    float sum = 0;
    for (const float x : row) sum += x;
    benchmark::DoNotOptimize(sum);
  }
}
BENCHMARK(BM_RowSum);

void BM_TokenLogprobs(benchmark::State& state) {
  const std::vector<float> row = random_row();
  const auto num_top = static_cast<int32_t>(state.range(0));
  int32_t token = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(ctxpar::engine::token_logprobs(row, token, num_top));
    token = (token + 7919) % static_cast<int32_t>(kVocab);
  }
  state.SetLabel("isa=" + std::string(ctxpar::isa_name(ctxpar::active_isa())));
}
BENCHMARK(BM_TokenLogprobs)->Arg(0)->Arg(1)->Arg(5)->Arg(20);

}  // namespace

BENCHMARK_MAIN();
