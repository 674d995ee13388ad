// `ctxpar plan`: how much KV a configuration holds, side by side without and with DCP, from the
// model config alone (no weights are read), so it works for real sizes such as DeepSeek-V3.
#include <fmt/format.h>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "ctxpar/core/error.h"
#include "ctxpar/engine/engine_config.h"
#include "ctxpar/kv/kv_cache_spec.h"
#include "ctxpar/model/kv_cache_plan.h"
#include "ctxpar/model/model_location.h"
#include "ctxpar/model/parallel_validation.h"
#include "output_format.h"

namespace ctxpar::app {
namespace {

struct PlanOptions {
  std::string model = "builtin:tiny-deepseek-v3";
  int tp = 1;
  int dcp = 1;
  int block_size = 16;
  int interleave = 1;
  std::string kv_cache_memory = "8GiB";
  int64_t max_model_len = 0;
  std::string kv_cache_dtype = "bfloat16";
  std::string sfa_indexer_mode = "replicated";
  bool json = false;
};

struct Column {
  int dcp;
  kv::KvCapacity capacity;
  int64_t bytes_per_token;          // this rank's bytes per token of a sequence, all layers
  int64_t indexer_bytes_per_token;  // of which sparse-attention index keys (full layers only)
  int indexer_layers;               // layers that keep index keys
  int64_t max_concurrent;           // requests of max_model_len the group holds at once
};

Column plan_column(const PlanOptions& o, const model::ModelConfig& config, int dcp, int64_t memory,
                   int64_t max_len, DType dtype) {
  const kv::DcpLayout layout(dcp, o.block_size, dcp == 1 ? 1 : o.interleave);
  const auto specs = model::kv_cache_specs_for(
      config, o.tp, dcp, dtype, attention::parse_sfa_indexer_mode(o.sfa_indexer_mode));
  Column c{dcp, kv::plan_kv_capacity(memory, layout, specs), 0, 0, 0, 0};
  // A block id covers B·N sequence tokens: sharded caches hold B of their rows per rank,
  // replicated ones all B·N.
  for (const kv::KvCacheSpec& s : specs) {
    const int64_t bytes = s.bytes_per_block(layout) / layout.tokens_per_virtual_block();
    c.bytes_per_token += bytes;
    if (s.kind == kv::KvCacheKind::kIndexer) {
      c.indexer_bytes_per_token += bytes;
      ++c.indexer_layers;
    }
  }
  const int64_t blocks_per_request = layout.num_virtual_blocks(max_len);
  c.max_concurrent = blocks_per_request > 0 ? c.capacity.num_blocks / blocks_per_request : 0;
  return c;
}

void run(const PlanOptions& o) {
  const model::ModelConfig config = model::resolve_model_config(model::locate_model(o.model));
  model::validate_for_parallel(config, o.tp, o.dcp);
  const int64_t memory = engine::parse_memory_size(o.kv_cache_memory);
  const int64_t max_len =
      o.max_model_len > 0 ? o.max_model_len : model::derived_max_model_len(config);
  CTXPAR_CHECK_INPUT(max_len >= 1, "--max-model-len {} must be >= 1", max_len);
  // "auto" is the checkpoint's dtype, as the engine resolves it without --dtype.
  const DType dtype = engine::parse_kv_cache_dtype(
      o.kv_cache_dtype, config.dtype == DType::kBF16 ? DType::kBF16 : DType::kF32);
  std::vector<Column> cols{plan_column(o, config, 1, memory, max_len, dtype)};
  if (o.dcp > 1) cols.push_back(plan_column(o, config, o.dcp, memory, max_len, dtype));
  if (o.json) {
    nlohmann::json j = {{"model", config.source},     {"tensor_parallel_size", o.tp},
                        {"block_size", o.block_size}, {"kv_cache_memory_per_rank", memory},
                        {"max_model_len", max_len},   {"kv_cache_dtype", o.kv_cache_dtype}};
    for (const Column& c : cols) {
      j["plans"].push_back({{"decode_context_parallel_size", c.dcp},
                            {"kv_bytes_per_token_per_rank", c.bytes_per_token},
                            {"indexer_bytes_per_token_per_rank", c.indexer_bytes_per_token},
                            {"indexer_layers", c.indexer_layers},
                            {"bytes_per_block", c.capacity.bytes_per_block},
                            {"blocks_per_rank", c.capacity.num_blocks},
                            {"kv_bytes_per_rank", c.capacity.kv_bytes_per_rank},
                            {"token_capacity", c.capacity.token_capacity},
                            {"max_concurrent_requests", c.max_concurrent}});
    }
    std::printf("%s\n", j.dump().c_str());
    return;
  }
  std::printf("%s, T=%d, B=%d, KV cache %s per rank (%s), max model len %ld\n",
              config.source.c_str(), o.tp, o.block_size, human_bytes(memory).c_str(),
              o.kv_cache_dtype.c_str(), static_cast<long>(max_len));
  std::printf("%-40s", "");
  for (const Column& c : cols) std::printf("%18s", fmt::format("N={}", c.dcp).c_str());
  std::printf("\n");
  auto row = [&](const char* name, auto value) {
    std::printf("%-40s", name);
    for (const Column& c : cols) std::printf("%18s", value(c).c_str());
    std::printf("\n");
  };
  row("KV bytes per rank per sequence token",
      [](const Column& c) { return std::to_string(c.bytes_per_token); });
  if (config.is_sparse()) {
    const bool sharded = o.sfa_indexer_mode == "sharded";
    const std::string label = fmt::format("  index keys ({} layers, {})", cols[0].indexer_layers,
                                          sharded ? "sharded" : "replicated");
    row(label.c_str(), [](const Column& c) { return std::to_string(c.indexer_bytes_per_token); });
  }
  row("blocks per rank", [](const Column& c) { return std::to_string(c.capacity.num_blocks); });
  row("token capacity (DCP group)",
      [](const Column& c) { return std::to_string(c.capacity.token_capacity); });
  row("max concurrent requests at max len",
      [](const Column& c) { return std::to_string(c.max_concurrent); });
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd =
      app.add_subcommand("plan", "KV capacity per rank with and without DCP (no weights read)");
  cmd->add_option("--model", o->model,
                  "builtin:NAME, a model directory or config.json, or a repo id in the Hugging "
                  "Face cache")
      ->capture_default_str();
  cmd->add_option("--tensor-parallel-size", o->tp)->capture_default_str();
  cmd->add_option("--decode-context-parallel-size", o->dcp)->capture_default_str();
  cmd->add_option("--block-size", o->block_size)->capture_default_str();
  cmd->add_option("--cp-kv-cache-interleave-size", o->interleave)->capture_default_str();
  cmd->add_option("--kv-cache-memory", o->kv_cache_memory, "bytes per rank (8GiB)")
      ->capture_default_str();
  cmd->add_option_function<std::string>(
      "--max-model-len",
      [o](const std::string& v) {
        o->max_model_len =
            v == "auto" || v == "-1" ? 0 : engine::parse_human_readable_int(v, "--max-model-len");
      },
      "32768, 32k or 32K; auto: the model's (vLLM's derived maximum)");
  cmd->add_option("--kv-cache-dtype", o->kv_cache_dtype,
                  "auto, bfloat16, float32 or fp8 (e4m3; a sparse model's index keys stay bf16)")
      ->capture_default_str();
  cmd->add_option("--sfa-indexer-mode", o->sfa_indexer_mode,
                  "sparse models: replicated or sharded indexer keys")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "print one JSON object");
  cmd->callback([o] { run(*o); });
}

}  // namespace ctxpar::app
