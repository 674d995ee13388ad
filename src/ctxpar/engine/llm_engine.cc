#include "ctxpar/engine/llm_engine.h"

#include <omp.h>

#include <fmt/format.h>
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <random>

#include "ctxpar/comm/group_agreement.h"
#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/comm/mpi_communicator.h"
#include "ctxpar/comm/mpi_session.h"
#include "ctxpar/core/error.h"
#include "ctxpar/core/fault_injection.h"
#include "ctxpar/engine/model_runner.h"
#include "ctxpar/engine/sampler.h"
#include "ctxpar/engine/scheduler.h"
#include "ctxpar/model/checkpoint.h"
#include "ctxpar/model/dummy_weights.h"

namespace ctxpar::engine {
namespace {

using Clock = std::chrono::steady_clock;

// "stop", "length", "abort", or "rejected: <why>" (the reason a user needs to act on).
std::string finish_reason(const Request& r) {
  std::string reason(r.finish_reason());
  if (r.status() == RequestStatus::kFinishedRejected) reason += ": " + r.finish_message();
  return reason;
}

StepPlan plan_of(const SchedulerOutput& out) {
  StepPlan plan;
  for (const ScheduledEntry& e : out.entries) {
    plan.entries.push_back({e.num_computed_tokens, e.new_token_ids, e.block_table, e.samples});
  }
  return plan;
}

// Rank 0: schedule, broadcast, run, sample, until every request finished.
void drive(const ResolvedEngineConfig& cfg, Communicator& world, ModelRunner& runner,
           int32_t num_blocks, const std::vector<GenerationRequest>& requests,
           const RunOptions& options, GenerationResult& result) {
  Scheduler scheduler(cfg.scheduler, num_blocks);
  Sampler sampler(cfg.raw.seed);
  std::map<std::string, size_t> index_of;
  std::vector<std::unique_ptr<std::mt19937_64>> generators(requests.size());
  int64_t rejected_early = 0;
  result.outputs.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const GenerationRequest& g = requests[i];
    const std::string id = g.id.empty() ? std::to_string(i) : g.id;
    CTXPAR_CHECK_INPUT(index_of.emplace(id, i).second, "request id '{}' is used twice", id);
    SamplingParams params = g.params;
    // The prefill role: the first token comes from the prefill's logits; nothing decodes.
    if (cfg.raw.prefill_only) params.max_tokens = 1;
    if (params.eos_token_ids.empty())
      params.eos_token_ids =
          std::vector<int32_t>(cfg.model.eos_token_ids.begin(), cfg.model.eos_token_ids.end());
    if (params.seed) generators[i] = std::make_unique<std::mt19937_64>(*params.seed);
    result.outputs[i].id = id;
    result.outputs[i].prompt_token_ids = g.prompt_token_ids;
    const auto bad = std::find_if(g.prompt_token_ids.begin(), g.prompt_token_ids.end(),
                                  [&](int32_t t) { return t < 0 || t >= cfg.model.vocab_size; });
    if (bad != g.prompt_token_ids.end()) {
      // The scheduler does not know the vocabulary: reject here, before any rank sees it.
      result.outputs[i].finish_reason = fmt::format(
          "rejected: token id {} is outside the vocabulary [0, {})", *bad, cfg.model.vocab_size);
      ++rejected_early;
      continue;
    }
    scheduler.add_request(id, g.prompt_token_ids, std::move(params));
  }
  int64_t finished = rejected_early, generated = 0;
  auto collect_finished = [&] {
    for (auto& r : scheduler.take_finished()) {
      GenerationOutput& o = result.outputs[index_of.at(r->id())];
      o.output_token_ids.assign(r->output_token_ids().begin(), r->output_token_ids().end());
      o.finish_reason = finish_reason(*r);
      ++finished;
    }
  };
  collect_finished();  // requests rejected on arrival
  EngineStats& stats = result.stats;
  while (scheduler.has_unfinished()) {
    const SchedulerOutput out = scheduler.schedule();
    CTXPAR_CHECK(!out.entries.empty(),
                 "the scheduler made no progress with {} running and {} "
                 "waiting requests",
                 scheduler.num_running(), scheduler.num_waiting());
    const StepPlan plan = plan_of(out);
    std::vector<uint8_t> bytes = plan.encode();
    world.broadcast_bytes(bytes, 0);
    const auto start = Clock::now();
    const Tensor logits = runner.execute(plan);
    // One row per sampling entry, in entry order.
    std::vector<SamplingRow> rows;
    std::vector<size_t> entry_of_row;
    for (size_t i = 0; i < out.entries.size(); ++i) {
      if (!out.entries[i].samples) continue;
      const Request* r = scheduler.find(out.entries[i].request_id);
      const size_t idx = index_of.at(out.entries[i].request_id);
      rows.push_back({&r->sampling_params(), generators[idx].get()});
      entry_of_row.push_back(i);
    }
    const std::vector<int32_t> sampled_rows = sampler.sample(logits, rows);
    std::vector<int32_t> sampled(out.entries.size(), 0);
    for (size_t j = 0; j < sampled_rows.size(); ++j) {
      sampled[entry_of_row[j]] = sampled_rows[j];
      if (options.record_logits) {
        const float* l = logits.data<float>() + static_cast<int64_t>(j) * logits.size(1);
        result.outputs[index_of.at(out.entries[entry_of_row[j]].request_id)].logits.emplace_back(
            l, l + logits.size(1));
      }
    }
    scheduler.update(out, sampled);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const int64_t decode_entries = out.num_decode_entries();
    const int64_t tokens = out.total_num_new_tokens();
    if (tokens > decode_entries) {
      stats.prefill_tokens += tokens - decode_entries;
      stats.prefill_seconds += seconds;
    } else {
      stats.decode_seconds += seconds;
      stats.decode_tokens += static_cast<int64_t>(sampled_rows.size());
    }
    generated += static_cast<int64_t>(sampled_rows.size());
    ++stats.steps;
    collect_finished();
    if (options.on_step) {
      options.on_step({finished, static_cast<int64_t>(requests.size()), generated});
    }
  }
  stats.preemptions = scheduler.stats().num_preemptions;
  StepPlan stop;
  stop.command = StepPlan::Command::kStop;
  std::vector<uint8_t> bytes = stop.encode();
  world.broadcast_bytes(bytes, 0);
}

// Ranks > 0: run whatever rank 0 broadcasts until it says stop.
void serve(Communicator& world, ModelRunner& runner) {
  for (;;) {
    std::vector<uint8_t> bytes;
    world.broadcast_bytes(bytes, 0);
    const StepPlan plan = StepPlan::decode(bytes);
    if (plan.command == StepPlan::Command::kStop) return;
    runner.execute(plan);
  }
}

void run_rank(const ResolvedEngineConfig& cfg, Communicator& world,
              const std::vector<GenerationRequest>& requests, const RunOptions& options,
              GenerationResult& result) {
  const auto load_start = Clock::now();
  omp_set_num_threads(cfg.threads_per_rank);  // oneDNN's threads for this rank
  ParallelGroups groups(world, cfg.raw.tensor_parallel_size, cfg.raw.decode_context_parallel_size);
  ThreadPool pool(cfg.threads_per_rank);
  std::unique_ptr<model::WeightSource> weights;
  if (cfg.use_dummy_weights) {
    weights = std::make_unique<model::DummyWeights>(cfg.raw.seed);
  } else {
    weights = model::Checkpoint::open(cfg.raw.model);
  }
  inject_test_fault(FaultPoint::kLoad, world.rank());
  inject_test_fault(FaultPoint::kOutOfMemory, world.rank());
  const model::ModelContext ctx{*weights, groups, cfg.options, pool};
  ModelRunner runner(cfg.model, ctx);

  const std::vector<kv::KvCacheSpec> specs = runner.model().kv_cache_specs();
  const kv::KvCapacity cap =
      kv::plan_kv_capacity(cfg.raw.kv_cache_memory, cfg.scheduler.layout, specs);
  CTXPAR_CHECK_INPUT(
      cap.token_capacity >= cfg.scheduler.max_model_len,
      "--kv-cache-memory {} bytes per rank holds {} blocks = {} tokens per DCP group "
      "({} bytes per block), fewer than one request of --max-model-len {}; raise "
      "--kv-cache-memory or lower --max-model-len",
      cfg.raw.kv_cache_memory, cap.num_blocks, cap.token_capacity, cap.bytes_per_block,
      cfg.scheduler.max_model_len);
  runner.allocate_kv_cache(cap.num_blocks);

  if (world.rank() == 0) {
    EngineStats& s = result.stats;
    s.kv_bytes_per_rank = runner.model().kv_cache_bytes();
    s.blocks_per_rank = cap.num_blocks;
    s.token_capacity = cap.token_capacity;
    s.token_capacity_without_dcp = cap.token_capacity_without_dcp;
    for (const kv::KvCacheSpec& spec : specs) {
      s.kv_bytes_per_token_per_rank += spec.bytes_per_block(cfg.scheduler.layout) /
                                       cfg.scheduler.layout.tokens_per_virtual_block();
    }
    s.load_seconds = std::chrono::duration<double>(Clock::now() - load_start).count();
    drive(cfg, world, runner, cap.num_blocks, requests, options, result);
  } else {
    serve(world, runner);
  }
}

}  // namespace

GenerationResult generate(const EngineConfig& config,
                          const std::vector<GenerationRequest>& requests,
                          const RunOptions& options) {
  GenerationResult result;
  if (config.distributed_executor_backend == "mpi") {
    CTXPAR_CHECK_INPUT(launched_by_mpirun(),
                       "--distributed-executor-backend mpi needs the process to "
                       "be started by mpirun (mpirun -np {} ctxpar ...)",
                       config.tensor_parallel_size);
    const auto world = MpiCommunicator::world();
    // Every rank validates the same flags, but files and environments may differ between
    // hosts: agree on the outcome before the first collective that needs all ranks, so one
    // rank's bad value stops every rank with its message. After this, a failing rank aborts
    // the job (main's run_or_abort_mpi).
    ResolvedEngineConfig cfg;
    run_agreed(*world, [&] {
      cfg = resolve_engine_config(config);
      CTXPAR_CHECK_INPUT(
          world->size() == config.tensor_parallel_size,
          "mpirun started {} processes but --tensor-parallel-size is {}; they must match",
          world->size(), config.tensor_parallel_size);
      inject_test_fault(FaultPoint::kStartup, world->rank());
    });
    run_rank(cfg, *world, requests, options, result);
  } else {
    const ResolvedEngineConfig cfg = resolve_engine_config(config);
    // The first rank to fail aborts the group; its error (naming it) is what generate throws.
    run_inprocess_ranks(config.tensor_parallel_size, [&](Communicator& world) {
      try {
        inject_test_fault(FaultPoint::kStartup, world.rank());
        run_rank(cfg, world, requests, options, result);
      } catch (...) {
        rethrow_naming_rank(world.rank());
      }
    });
  }
  return result;
}

}  // namespace ctxpar::engine
