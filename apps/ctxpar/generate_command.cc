// `ctxpar generate`: run prompts through a model with TP and DCP and print the tokens, the KV
// memory per rank and the throughput (or one JSON object with --json).
#include <unistd.h>

#include <fmt/format.h>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "ctxpar/tokenizer/incremental_detokenizer.h"
#include "engine_flags.h"
#include "output_format.h"

namespace ctxpar::app {
namespace {

struct GenerateOptions {
  EngineFlags engine;
  PromptFlags prompts;
  bool json = false;
};

void print_progress(const engine::StepProgress& p) {
  constexpr int kWidth = 30;
  const int filled = p.total_requests > 0
                         ? static_cast<int>(kWidth * p.finished_requests / p.total_requests)
                         : kWidth;
  std::fprintf(stderr, "\r[%s%s] %ld/%ld requests, %ld tokens", std::string(filled, '=').c_str(),
               std::string(kWidth - filled, ' ').c_str(), static_cast<long>(p.finished_requests),
               static_cast<long>(p.total_requests), static_cast<long>(p.generated_tokens));
  if (p.finished_requests == p.total_requests) std::fprintf(stderr, "\n");
}

void run(const GenerateOptions& o) {
  engine::EngineConfig config;
  std::vector<engine::GenerationRequest> requests;
  // Text prompts need the tokenizer on every rank (the ranks validate the prompts alike);
  // otherwise only the output rank loads it, to print text.
  LazyTokenizer tokenizer(config);
  validate_on_every_rank([&] {
    config = finish_engine_config(o.engine);
    requests = build_requests(o.prompts, config, tokenizer);
  });
  engine::RunOptions run;
  const bool output_rank = is_output_rank();
  if (output_rank && !o.json && isatty(STDERR_FILENO)) run.on_step = print_progress;
  const engine::GenerationResult result = engine::generate(config, requests, run);
  if (!output_rank) return;

  const tokenizer::LoadedTokenizer* text = tokenizer.get_if_available();
  // The output as vLLM shows it: decoded after the prompt, special tokens skipped.
  auto output_text = [&](const engine::GenerationOutput& out) {
    tokenizer::IncrementalDetokenizer detok(*text->tokenizer, out.prompt_token_ids);
    for (const int32_t id : out.output_token_ids) detok.add(id);
    detok.finish();
    return detok.text();
  };
  if (o.json) {
    nlohmann::json j = stats_json(result.stats, config);
    j["requests"] = nlohmann::json::array();
    for (const auto& out : result.outputs) {
      nlohmann::json r = {{"id", out.id},
                          {"prompt_token_ids", out.prompt_token_ids},
                          {"output_token_ids", out.output_token_ids},
                          {"finish_reason", out.finish_reason}};
      if (text != nullptr) r["text"] = output_text(out);
      j["requests"].push_back(std::move(r));
    }
    // The byte tokenizer of the built-in models can end inside a character: write U+FFFD.
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return;
  }
  for (const auto& out : result.outputs) {
    std::printf("Request %s (%zu prompt tokens, finish: %s)\n", out.id.c_str(),
                out.prompt_token_ids.size(), out.finish_reason.c_str());
    if (text != nullptr) {
      std::printf("  prompt: \"%s\"\n  output: \"%s\"\n",
                  printable(text->tokenizer->decode(out.prompt_token_ids, false)).c_str(),
                  printable(output_text(out)).c_str());
    }
    std::printf("  output_token_ids: %s\n",
                fmt::format("{}", fmt::join(out.output_token_ids, ",")).c_str());
  }
  std::printf("%s", stats_text(result.stats, config).c_str());
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto options = std::make_shared<GenerateOptions>();
  CLI::App* cmd = app.add_subcommand("generate", "generate tokens for prompts with TP and DCP");
  add_engine_flags(cmd, options->engine);
  add_prompt_flags(cmd, options->prompts);
  cmd->add_flag("--json", options->json, "print one JSON object");
  cmd->callback([options] { run(*options); });
}

}  // namespace ctxpar::app
