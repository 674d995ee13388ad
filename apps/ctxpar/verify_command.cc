// `ctxpar verify`: the tool to run when DCP output looks wrong. Runs the same prompts with the
// given (T, N, I, B, comm plan) and with T = N = 1, greedily, and prints for every generated
// token the largest |logit difference| and whether the tokens agree. Exit status 1 on any
// disagreement.
#include <cmath>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "engine_flags.h"

namespace ctxpar::app {
namespace {

struct VerifyOptions {
  EngineFlags engine;
  PromptFlags prompts;
  double tolerance = 1e-3;  // max |Δlogit| reported as a mismatch even when tokens agree
};

void run(const VerifyOptions& o) {
  engine::EngineConfig config;
  std::vector<engine::GenerationRequest> requests;
  LazyTokenizer tokenizer(config);
  validate_on_every_rank([&] {
    config = finish_engine_config(o.engine);
    requests = build_requests(o.prompts, config, tokenizer);
  });
  for (auto& r : requests) r.params.temperature = 0;  // greedy: tokens must agree exactly
  engine::RunOptions run;
  run.record_logits = true;
  const engine::GenerationResult got = engine::generate(config, requests, run);
  engine::EngineConfig single = config;
  single.tensor_parallel_size = 1;
  single.decode_context_parallel_size = 1;
  single.cp_kv_cache_interleave_size = 1;
  single.distributed_executor_backend.clear();  // the reference runs in this process
  const engine::GenerationResult want =
      is_output_rank() ? engine::generate(single, requests, run) : engine::GenerationResult{};
  if (!is_output_rank()) return;

  bool ok = true;
  std::printf("verify: T=%d N=%d I=%d B=%d %s against T=N=1 (tolerance %.1e)\n",
              config.tensor_parallel_size, config.decode_context_parallel_size,
              config.cp_kv_cache_interleave_size, config.block_size,
              config.dcp_comm_backend.c_str(), o.tolerance);
  for (size_t i = 0; i < requests.size(); ++i) {
    const auto& a = got.outputs[i];
    const auto& b = want.outputs[i];
    const size_t steps = std::min(a.output_token_ids.size(), b.output_token_ids.size());
    for (size_t s = 0; s < steps; ++s) {
      double max_diff = 0;
      for (size_t v = 0; v < a.logits[s].size(); ++v) {
        max_diff = std::max(max_diff, std::fabs(double(a.logits[s][v]) - b.logits[s][v]));
      }
      const bool same = a.output_token_ids[s] == b.output_token_ids[s];
      const bool good = same && max_diff <= o.tolerance;
      ok = ok && good;
      std::printf("request %s step %zu: max|dlogit| %.3e, token %d vs %d %s\n", a.id.c_str(), s,
                  max_diff, a.output_token_ids[s], b.output_token_ids[s], good ? "ok" : "MISMATCH");
      if (!same) break;  // later steps continue from different tokens
    }
    if (a.output_token_ids.size() != b.output_token_ids.size()) {
      ok = false;
      std::printf("request %s: %zu vs %zu output tokens MISMATCH\n", a.id.c_str(),
                  a.output_token_ids.size(), b.output_token_ids.size());
    }
  }
  std::printf("verify: %s\n", ok ? "all tokens agree" : "DISAGREEMENT");
  if (!ok) exit_code() = 1;
}

}  // namespace

void add_verify_command(CLI::App& app) {
  auto o = std::make_shared<VerifyOptions>();
  CLI::App* cmd = app.add_subcommand(
      "verify", "compare a TP/DCP configuration with T=N=1 token by token (exit 1 on mismatch)");
  add_engine_flags(cmd, o->engine);
  add_prompt_flags(cmd, o->prompts);
  cmd->add_option("--tolerance", o->tolerance, "largest |logit difference| accepted")
      ->capture_default_str();
  cmd->callback([o] { run(*o); });
}

}  // namespace ctxpar::app
