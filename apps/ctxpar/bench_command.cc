// `ctxpar bench`: prefill and decode throughput at given batch sizes and context lengths,
// without DCP (N = 1) and with the requested N at the same T, as a table.
#include <fmt/format.h>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <sstream>

#include "commands.h"
#include "ctxpar/core/cpu_features.h"
#include "ctxpar/core/error.h"
#include "engine_flags.h"
#include "output_format.h"

namespace ctxpar::app {
namespace {

struct BenchOptions {
  EngineFlags engine;
  std::string batch_sizes = "1,4";
  std::string context_lengths = "256,1024";
  int64_t output_len = 16;
  int num_iters_warmup = 1;
  bool json = false;
};

std::vector<int64_t> parse_list(const std::string& text, const char* flag) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      out.push_back(std::stoll(item));
    } catch (const std::exception&) {
      CTXPAR_INPUT_FAIL("{} '{}': '{}' is not a number", flag, text, item);
    }
    CTXPAR_CHECK_INPUT(out.back() >= 1, "{} values must be >= 1, got {}", flag, out.back());
  }
  CTXPAR_CHECK_INPUT(!out.empty(), "{} is empty", flag);
  return out;
}

void run(const BenchOptions& o) {
  engine::EngineConfig base;
  std::vector<int64_t> batches, contexts;
  validate_on_every_rank([&] {
    base = finish_engine_config(o.engine);
    if (base.load_format == "auto") base.load_format = "dummy";
    batches = parse_list(o.batch_sizes, "--batch-sizes");
    contexts = parse_list(o.context_lengths, "--context-lengths");
  });
  std::vector<int> dcps{1};
  if (base.decode_context_parallel_size > 1) dcps.push_back(base.decode_context_parallel_size);
  std::mt19937 rng(static_cast<uint32_t>(base.seed));
  nlohmann::json rows = nlohmann::json::array();
  // The kernels' ISA (the CPU's best, or lower with CTXPAR_ISA): rates differ by ISA.
  const std::string isa(isa_name(active_isa()));
  if (is_output_rank() && !o.json) {
    std::printf("isa %s\n", isa.c_str());
    std::printf("%-6s %-8s %-4s %14s %14s %12s %12s %12s %12s %14s\n", "batch", "context", "N",
                "prefill tok/s", "decode tok/s", "decode batch", "decode comm", "KV used/rank",
                "KV pool/rank", "capacity");
  }
  for (int64_t batch : batches) {
    for (int64_t context : contexts) {
      // Random prompts, new ones for every warm-up round (a repeated prompt would be served
      // from the prefix cache).
      const auto make_batch = [&] {
        std::vector<engine::GenerationRequest> requests(static_cast<size_t>(batch));
        for (auto& r : requests) {
          for (int64_t i = 0; i < context; ++i)
            r.prompt_token_ids.push_back(static_cast<int32_t>(rng() % 256));
          r.params.temperature = 0;
          r.params.max_tokens = o.output_len;
          r.params.ignore_eos = true;
        }
        return requests;
      };
      engine::RunOptions run_options;
      for (int w = 0; w < o.num_iters_warmup; ++w) run_options.warmup.push_back(make_batch());
      const std::vector<engine::GenerationRequest> requests = make_batch();
      for (int dcp : dcps) {
        engine::EngineConfig c = base;
        c.decode_context_parallel_size = dcp;
        if (dcp == 1) c.cp_kv_cache_interleave_size = 1;
        if (c.max_model_len == 0) c.max_model_len = context + o.output_len;
        // Skipped prompts cost nothing: admit them all in the first step, so every request
        // decodes in every decode step (with a real prefill, the first requests decode while
        // later ones prefill, in steps counted as prefill; "decode batch" shows the rest).
        if (c.dummy_context) {
          c.max_num_batched_tokens = std::max(
              {c.max_num_batched_tokens, engine::kDefaultMaxNumBatchedTokens, batch * context});
        }
        const engine::GenerationResult r = engine::generate(c, requests, run_options);
        if (!is_output_rank()) continue;
        const auto& s = r.stats;
        const double prefill =
            s.prefill_seconds > 0 ? double(s.prefill_tokens) / s.prefill_seconds : 0;
        const double decode = s.decode_seconds > 0 ? double(s.decode_tokens) / s.decode_seconds : 0;
        // Requests per decode-only step, on average.
        const double decode_batch =
            s.decode_steps > 0 ? double(s.decode_tokens) / double(s.decode_steps) : 0;
        // Rank 0's share of the decode steps spent in TP and DCP collectives.
        const double decode_comm =
            s.decode_seconds > 0 ? s.decode_collective_seconds / s.decode_seconds : 0;
        // KV rows written per rank: every prompt token and every output token but the last
        // (sampled, never fed back); a DCP-sharded row counts 1/N on each rank.
        const int64_t kv_used =
            batch * (context + o.output_len - 1) * s.kv_bytes_per_token_per_rank;
        rows.push_back({{"batch", batch},
                        {"context", context},
                        {"dcp", dcp},
                        {"prefill_tokens_per_second",
                         c.dummy_context ? nlohmann::json() : nlohmann::json(prefill)},
                        {"decode_tokens_per_second", decode},
                        {"mean_decode_batch", decode_batch},
                        {"decode_collective_share", decode_comm},
                        {"kv_bytes_used_per_rank", kv_used},
                        {"kv_bytes_per_rank", s.kv_bytes_per_rank},
                        {"token_capacity", s.token_capacity},
                        {"isa", isa}});
        if (!o.json) {
          const std::string prefill_text =
              c.dummy_context ? std::string("-") : fmt::format("{:.1f}", prefill);
          std::printf("%-6ld %-8ld %-4d %14s %14.2f %12.2f %11.1f%% %12s %12s %14ld\n",
                      static_cast<long>(batch), static_cast<long>(context), dcp,
                      prefill_text.c_str(), decode, decode_batch, 100 * decode_comm,
                      human_bytes(kv_used).c_str(), human_bytes(s.kv_bytes_per_rank).c_str(),
                      static_cast<long>(s.token_capacity));
        }
      }
    }
  }
  if (is_output_rank() && o.json) std::printf("%s\n", rows.dump().c_str());
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "prefill/decode throughput, N = 1 against the given N at the same T");
  add_engine_flags(cmd, o->engine);
  cmd->add_option("--batch-sizes", o->batch_sizes, "comma-separated")->capture_default_str();
  cmd->add_option("--context-lengths", o->context_lengths, "prompt tokens, comma-separated")
      ->capture_default_str();
  cmd->add_option("--output-len", o->output_len, "decode tokens per request")
      ->capture_default_str();
  cmd->add_option("--num-iters-warmup", o->num_iters_warmup,
                  "batches of the same shape run first on the loaded engine, not timed")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--dummy-context", o->engine.config.dummy_context,
                "skip the prefill: the prompt's KV is random values written when the cache is "
                "allocated, so decode at long contexts is timed without computing them (the "
                "prefill column is then empty)");
  cmd->add_flag("--json", o->json, "print one JSON array");
  cmd->callback([o] { run(*o); });
}

}  // namespace ctxpar::app
