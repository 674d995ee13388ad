#include "ctxpar/engine/online_engine.h"

#include <omp.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <cstdio>
#include <thread>
#include <utility>

#include "ctxpar/comm/group_agreement.h"
#include "ctxpar/comm/inprocess_communicator.h"
#include "ctxpar/comm/mpi_communicator.h"
#include "ctxpar/comm/mpi_session.h"
#include "ctxpar/comm/parallel_groups.h"
#include "ctxpar/core/error.h"
#include "ctxpar/core/fault_injection.h"
#include "ctxpar/engine/model_runner.h"
#include "ctxpar/engine/sampler.h"
#include "ctxpar/engine/scheduler.h"
#include "ctxpar/engine/step_plan.h"
#include "ctxpar/engine/structured_output.h"
#include "ctxpar/kv/kv_cache_spec.h"
#include "ctxpar/model/checkpoint.h"
#include "ctxpar/model/dummy_weights.h"

namespace ctxpar::engine {
namespace {

std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

// The stop_token_ids entry that ended a stopped request, or nullopt when EOS did (vLLM's
// check_stop tests EOS first, unless ignore_eos).
std::optional<int32_t> stop_token_id(const Request& r) {
  const auto token = r.stop_token();
  if (!token) return std::nullopt;
  const SamplingParams& p = r.sampling_params();
  if (!p.ignore_eos && p.is_eos(*token)) return std::nullopt;
  return p.is_stop_token(*token) ? token : std::nullopt;
}

FinishReason reason_of(RequestStatus status) {
  switch (status) {
    case RequestStatus::kFinishedStopped:
      return FinishReason::kStop;
    case RequestStatus::kFinishedLength:
      return FinishReason::kLength;
    case RequestStatus::kFinishedAborted:
      return FinishReason::kAbort;
    default:
      return FinishReason::kError;  // rejected by the scheduler (add_request checks first)
  }
}

// Calls a consumer, turning an exception into an abort of its request (it must not throw).
bool consume(const OutputConsumer& consumer, RequestOutput output) {
  try {
    consumer(std::move(output));
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ctxpar: an output consumer threw (%s); its request is aborted\n",
                 e.what());
  } catch (...) {
    std::fprintf(stderr, "ctxpar: an output consumer threw; its request is aborted\n");
  }
  return false;
}

}  // namespace

std::string_view finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
    case FinishReason::kError:
      return "error";
  }
  return "error";
}

OnlineEngine::OnlineEngine(const ResolvedEngineConfig& config, OnlineEngineOptions options)
    : config_(config), options_(std::move(options)) {}

OnlineEngine::~OnlineEngine() = default;

std::optional<std::string> OnlineEngine::problem(const EngineRequest& request) const {
  const auto& prompt = request.prompt_token_ids;
  if (prompt.empty()) return "the prompt has 0 tokens; a request needs at least 1";
  const int64_t vocab = config_.model.vocab_size;
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= vocab) {
      return fmt::format("token id {} at prompt position {} is outside the vocabulary [0, {})",
                         prompt[i], i, vocab);
    }
  }
  const int64_t max_len = config_.scheduler.max_model_len;
  if (static_cast<int64_t>(prompt.size()) > max_len) {
    return fmt::format("the prompt has {} tokens, more than max_model_len {}", prompt.size(),
                       max_len);
  }
  if (auto bad = request.params.problem()) return bad;
  // vLLM's messages for ids past the vocabulary.
  const auto past_vocab = [&](const auto& ids, const auto& id_of) {
    std::vector<int32_t> out;
    for (const auto& entry : ids) {
      if (id_of(entry) >= vocab) out.push_back(id_of(entry));
    }
    return out;
  };
  const auto bias_id = [](const std::pair<int32_t, float>& e) { return e.first; };
  const auto plain_id = [](int32_t id) { return id; };
  if (const auto ids = past_vocab(request.params.logit_bias, bias_id); !ids.empty()) {
    return fmt::format(
        "token_id(s) [{}] in logit_bias contain out-of-vocab token ids. "
        "Vocabulary size: {}",
        fmt::join(ids, ", "), vocab);
  }
  if (const auto ids = past_vocab(request.params.allowed_token_ids, plain_id); !ids.empty()) {
    return fmt::format(
        "allowed_token_ids contains out-of-vocab token id! [{}] (vocabulary size {})",
        fmt::join(ids, ", "), vocab);
  }
  const int64_t max_logprobs = config_.max_logprobs();
  const std::pair<const char*, std::optional<int32_t>> asked[] = {
      {"sample", request.params.logprobs}, {"prompt", request.params.prompt_logprobs}};
  for (const auto& [kind, n] : asked) {
    if (n && *n > max_logprobs) {
      return fmt::format(
          "Requested {} logprobs of {}, which is greater than max allowed: {} (--max-logprobs; "
          "the vocabulary has {} tokens)",
          kind, *n, max_logprobs, vocab);
    }
  }
  if (request.params.prompt_logprobs && config_.raw.dummy_context) {
    return std::string(
        "prompt_logprobs needs the prompt computed, which a dummy-context engine "
        "does not do");
  }
  return std::nullopt;
}

void OnlineEngine::add_request(EngineRequest request, OutputConsumer consumer) {
  std::vector<std::pair<EngineRequest, OutputConsumer>> one;
  one.emplace_back(std::move(request), std::move(consumer));
  add_requests(std::move(one));
}

void OnlineEngine::check_can_add(const std::vector<Queued>& batch) const {
  CTXPAR_CHECK(state_ != State::kFailed, "the engine failed and takes no requests: {}", failure_);
  CTXPAR_CHECK(!shutdown_ && state_ != State::kStopped,
               "the engine is shutting down and takes no new requests");
  std::unordered_set<RequestId> ids;
  for (const Queued& q : batch) {
    const RequestId& id = q.request.id;
    CTXPAR_CHECK_INPUT(!unfinished_ids_.contains(id) && ids.insert(id).second,
                       "request id '{}' is already in use by an unfinished request", id);
  }
}

void OnlineEngine::add_requests(std::vector<std::pair<EngineRequest, OutputConsumer>> requests) {
  std::vector<Queued> batch;
  batch.reserve(requests.size());
  for (auto& [request, consumer] : requests) {
    CTXPAR_CHECK(consumer != nullptr, "request '{}' has no output consumer", request.id);
    if (auto why = problem(request)) CTXPAR_INPUT_FAIL("{}", *why);
    batch.push_back({std::move(request), std::move(consumer)});
  }
  {
    std::lock_guard lock(mu_);
    check_can_add(batch);
    for (Queued& q : batch) {
      unfinished_ids_.insert(q.request.id);
      inbox_.push_back(std::move(q));
    }
  }
  cv_.notify_all();
}

void OnlineEngine::abort(const RequestId& id) {
  {
    std::lock_guard lock(mu_);
    aborts_.push_back(id);
  }
  cv_.notify_all();
}

void OnlineEngine::shutdown(ShutdownMode mode) {
  {
    std::lock_guard lock(mu_);
    if (!shutdown_) shutdown_ = mode;
  }
  cv_.notify_all();
}

bool OnlineEngine::wait_until_loaded() const {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return state_ != State::kLoading; });
  return loaded_;
}

OnlineEngine::State OnlineEngine::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

std::string OnlineEngine::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

EngineSnapshot OnlineEngine::snapshot() const {
  std::lock_guard lock(mu_);
  return snapshot_;
}

EngineStats OnlineEngine::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void OnlineEngine::run(Communicator& world, ModelRunner& runner, int32_t num_blocks,
                       const EngineStats& load_stats) {
  scheduler_ = std::make_unique<Scheduler>(config_.scheduler, num_blocks);
  sampler_ = std::make_unique<Sampler>(config_.raw.seed);
  plans_ = std::make_unique<StepPlanBuilder>();
  {
    std::lock_guard lock(mu_);
    stats_ = load_stats;
    state_ = State::kRunning;
    loaded_ = true;
  }
  publish_snapshot();
  cv_.notify_all();
  for (;;) {
    std::vector<Queued> batch;
    std::vector<RequestId> aborts;
    std::optional<ShutdownMode> shutdown;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] {
        return !inbox_.empty() || !aborts_.empty() || shutdown_ || scheduler_->has_unfinished();
      });
      batch.swap(inbox_);
      aborts.swap(aborts_);
      shutdown = shutdown_;
    }
    admit(std::move(batch));
    for (const RequestId& id : aborts) scheduler_->abort(id);
    if (shutdown == ShutdownMode::kAbort) {
      for (const auto& [id, live] : live_) scheduler_->abort(id);
    }
    collect_finished();
    deliver();
    if (scheduler_->has_unfinished()) {
      step(world, runner);
    } else {
      publish_snapshot();
      if (shutdown) break;
    }
  }
  StepPlan stop;
  stop.command = StepPlan::Command::kStop;
  std::vector<uint8_t> bytes = stop.encode();
  world.broadcast_bytes(bytes, 0);
  {
    std::lock_guard lock(mu_);
    state_ = State::kStopped;
  }
  cv_.notify_all();
}

void OnlineEngine::admit(std::vector<Queued> batch) {
  for (Queued& q : batch) {
    EngineRequest& r = q.request;
    SamplingParams params = std::move(r.params);
    if (config_.raw.prefill_only) {
      // The prefill role: the first token comes from the prefill's logits; nothing decodes.
      params.max_tokens = 1;
      params.min_tokens = std::min<int64_t>(params.min_tokens, 1);
    }
    if (params.eos_token_ids.empty()) {
      params.eos_token_ids.assign(config_.model.eos_token_ids.begin(),
                                  config_.model.eos_token_ids.end());
    }
    Live live{std::move(q.consumer), r.return_logits, {}, nullptr};
    if (params.structured_output) live.structured = std::make_shared<StructuredOutputState>(params);
    live.pending.num_prompt_tokens = static_cast<int64_t>(r.prompt_token_ids.size());
    live_.emplace(r.id, std::move(live));
    scheduler_->add_request(r.id, std::move(r.prompt_token_ids), std::move(params));
  }
}

void OnlineEngine::step(Communicator& world, ModelRunner& runner) {
  const SchedulerOutput out = scheduler_->schedule();
  CTXPAR_CHECK(!out.entries.empty(),
               "the scheduler made no progress with {} running and {} waiting requests",
               scheduler_->num_running(), scheduler_->num_waiting());
  const StepPlan plan = plans_->build(out);
  std::vector<uint8_t> bytes = plan.encode();
  world.broadcast_bytes(bytes, 0);
  const auto start = Clock::now();
  for (const ScheduledEntry& e : out.entries) {
    std::optional<Clock::time_point>& first = live_.at(e.request_id).pending.first_scheduled;
    if (!first) first = start;
  }
  const double collectives_before = runner.collective_seconds();
  const Tensor logits = runner.execute(plan);
  const double collective_seconds = runner.collective_seconds() - collectives_before;

  // The step's rows of logits (ModelRunner::execute): every token's for an all_logits entry,
  // the last token's for another sampling entry. first_row[i]: entry i's first row.
  std::vector<int64_t> first_row(out.entries.size(), -1);
  int64_t num_rows = 0, num_sampling = 0;
  bool any_all_logits = false;
  for (size_t i = 0; i < out.entries.size(); ++i) {
    const ScheduledEntry& e = out.entries[i];
    num_sampling += e.samples ? 1 : 0;
    if (!e.samples && !e.all_logits) continue;
    first_row[i] = num_rows;
    num_rows += e.all_logits ? e.num_new_tokens : 1;
    any_all_logits = any_all_logits || e.all_logits;
  }
  const int64_t vocab = logits.ndim() == 2 ? logits.size(1) : 0;
  CTXPAR_CHECK(logits.ndim() == 2 && logits.size(0) == num_rows,
               "the step returned logits {} for {} rows", logits.describe(), num_rows);
  const auto logits_row = [&](int64_t row) {
    return std::span<const float>(logits.data<float>() + row * vocab, static_cast<size_t>(vocab));
  };
  collect_prompt_logprobs(out, first_row, logits_row, runner.pool());

  // One row of logits per sampling entry, in entry order (copied out of the step's rows when
  // some entry returned more than its last).
  Tensor sampling_logits = logits;
  if (any_all_logits) {
    sampling_logits = Tensor::empty({num_sampling, vocab}, DType::kF32);
    int64_t row = 0;
    for (size_t i = 0; i < out.entries.size(); ++i) {
      const ScheduledEntry& e = out.entries[i];
      if (!e.samples) continue;
      const auto from = logits_row(first_row[i] + (e.all_logits ? e.num_new_tokens - 1 : 0));
      std::copy(from.begin(), from.end(), sampling_logits.data<float>() + row++ * vocab);
    }
  }
  std::vector<SamplingRow> rows;
  std::unordered_map<RequestId, int64_t> row_of;
  // Structured outputs: one mask per constrained row, [mask_words(vocab)].
  std::vector<std::vector<uint32_t>> masks;
  masks.reserve(out.entries.size());
  for (const ScheduledEntry& e : out.entries) {
    if (!e.samples) continue;
    const Request* r = scheduler_->find(e.request_id);
    row_of.emplace(e.request_id, static_cast<int64_t>(rows.size()));
    SamplingRow row{&r->sampling_params(), r->generator(), r->prompt_token_ids(),
                    r->output_token_ids()};
    const auto& state = live_.at(e.request_id).structured;
    if (state) state->sync(r->output_token_ids());
    if (state && state->constrained()) {
      masks.emplace_back(structured::mask_words(vocab));
      state->fill_mask(masks.back());
      row.allowed_tokens = masks.back();
    }
    rows.push_back(row);
  }
  const std::vector<int32_t> sampled_rows = sampler_->sample(sampling_logits, rows);
  std::vector<int32_t> sampled(out.entries.size(), 0);
  for (size_t i = 0; i < out.entries.size(); ++i) {
    const auto it = row_of.find(out.entries[i].request_id);
    if (out.entries[i].samples) sampled[i] = sampled_rows[static_cast<size_t>(it->second)];
  }
  const std::vector<RequestUpdate> updates = scheduler_->update(out, sampled);

  for (const RequestUpdate& u : updates) {
    Live& live = live_.at(u.request_id);
    RequestOutput& pending = live.pending;
    if (pending.token_ids.empty()) pending_order_.push_back(u.request_id);
    pending.token_ids.push_back(u.new_token);
    const std::span<const float> row(
        sampling_logits.data<float>() + row_of.at(u.request_id) * vocab,
        static_cast<size_t>(vocab));
    const SamplingParams& params = scheduler_->find(u.request_id)->sampling_params();
    if (params.logprobs)
      pending.logprobs.push_back(token_logprobs(row, u.new_token, *params.logprobs));
    if (live.return_logits) pending.logits.emplace_back(row.begin(), row.end());
    ++pending.num_output_tokens;
    pending.num_cached_tokens = scheduler_->find(u.request_id)->num_cached_tokens();
  }

  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  const int64_t decode_entries = out.num_decode_entries();
  const int64_t tokens = out.total_num_new_tokens();
  StepReport report;
  report.num_prompt_tokens = tokens - decode_entries;
  report.num_sampled = static_cast<int64_t>(sampled_rows.size());
  report.seconds = seconds;
  {
    std::lock_guard lock(mu_);
    if (tokens > decode_entries) {
      stats_.prefill_tokens += tokens - decode_entries;
      stats_.prefill_seconds += seconds;
      stats_.prefill_collective_seconds += collective_seconds;
    } else {
      stats_.decode_seconds += seconds;
      ++stats_.decode_steps;
      stats_.decode_collective_seconds += collective_seconds;
      stats_.decode_tokens += static_cast<int64_t>(sampled_rows.size());
    }
    ++stats_.steps;
    const SchedulerStats scheduled = scheduler_->stats();
    stats_.preemptions = scheduled.num_preemptions;
    stats_.prefix_cache = scheduled.prefix_cache;
  }
  collect_finished();
  deliver();
  publish_snapshot();
  if (options_.on_step) {
    report.snapshot = snapshot();
    options_.on_step(report);
  }
}

void OnlineEngine::collect_prompt_logprobs(
    const SchedulerOutput& out, std::span<const int64_t> first_row,
    const std::function<std::span<const float>(int64_t)>& logits_row, ThreadPool& pool) {
  // One job per prompt token to score: its row of logits and where its score goes.
  struct Job {
    int64_t row;
    int32_t token;
    int32_t num_top;
    SampledLogprobs* into;
  };
  std::vector<Job> jobs;
  for (size_t i = 0; i < out.entries.size(); ++i) {
    const ScheduledEntry& e = out.entries[i];
    if (!e.all_logits) continue;
    const Request* r = scheduler_->find(e.request_id);
    const auto prompt = r->prompt_token_ids();
    const int32_t num_top = *r->sampling_params().prompt_logprobs;
    std::vector<SampledLogprobs>& scored = live_.at(e.request_id).pending.prompt_logprobs;
    // The logits at position p score prompt token p + 1; scored[j] is prompt token j + 1.
    // Positions scored before a preemption are computed again; their scores stand.
    const int64_t first =
        std::max<int64_t>(e.num_computed_tokens + 1, static_cast<int64_t>(scored.size()) + 1);
    const int64_t last = std::min<int64_t>(e.num_computed_tokens + e.num_new_tokens,
                                           static_cast<int64_t>(prompt.size()) - 1);
    if (first > last) continue;
    CTXPAR_CHECK(first == static_cast<int64_t>(scored.size()) + 1,
                 "request '{}' skips prompt logprobs {} to {}", e.request_id, scored.size() + 1,
                 first - 1);
    const size_t base = scored.size();
    scored.resize(base + static_cast<size_t>(last - first + 1));
    for (int64_t next = first; next <= last; ++next) {
      jobs.push_back({first_row[i] + (next - 1 - e.num_computed_tokens),
                      prompt[static_cast<size_t>(next)], num_top,
                      &scored[base + static_cast<size_t>(next - first)]});
    }
  }
  // A row of a large vocabulary takes a fraction of a millisecond: worth the pool's threads.
  pool.parallel_for(static_cast<int64_t>(jobs.size()), 4, [&](int64_t b, int64_t e, int) {
    for (int64_t j = b; j < e; ++j) {
      const Job& job = jobs[static_cast<size_t>(j)];
      *job.into = token_logprobs(logits_row(job.row), job.token, job.num_top);
    }
  });
}

void OnlineEngine::collect_finished() {
  for (const auto& r : scheduler_->take_finished()) {
    plans_->finished(r->id());
    RequestOutput& pending = live_.at(r->id()).pending;
    if (pending.token_ids.empty()) pending_order_.push_back(r->id());
    pending.finish_reason = reason_of(r->status());
    pending.stop_token_id = stop_token_id(*r);
    pending.finish_message = r->finish_message();
    pending.num_output_tokens = r->num_output_tokens();
    pending.num_cached_tokens = r->num_cached_tokens();
  }
}

void OnlineEngine::deliver() {
  for (const RequestId& id : pending_order_) {
    const auto it = live_.find(id);
    RequestOutput output = std::move(it->second.pending);
    it->second.pending = RequestOutput{};
    it->second.pending.num_prompt_tokens = output.num_prompt_tokens;
    it->second.pending.num_output_tokens = output.num_output_tokens;
    it->second.pending.num_cached_tokens = output.num_cached_tokens;
    it->second.pending.first_scheduled = output.first_scheduled;
    if (output.finished()) {
      // Free the id before the consumer learns the request ended, so it can reuse it at once.
      OutputConsumer consumer = std::move(it->second.consumer);
      live_.erase(it);
      {
        std::lock_guard lock(mu_);
        unfinished_ids_.erase(id);
      }
      consume(consumer, std::move(output));
    } else if (!consume(it->second.consumer, std::move(output))) {
      abort(id);
    }
  }
  pending_order_.clear();
}

void OnlineEngine::publish_snapshot() {
  const SchedulerStats s = scheduler_->stats();
  std::lock_guard lock(mu_);
  snapshot_.num_running = s.num_running;
  snapshot_.num_waiting = s.num_waiting + static_cast<int32_t>(inbox_.size());
  snapshot_.num_blocks = s.num_blocks;
  snapshot_.num_used_blocks = s.num_used_blocks;
  snapshot_.num_preemptions = s.num_preemptions;
  snapshot_.num_steps = s.num_steps;
}

void OnlineEngine::fail(const std::exception_ptr& error) {
  const std::string message = message_of(error);
  std::vector<Queued> queued;
  {
    std::lock_guard lock(mu_);
    state_ = State::kFailed;
    failure_ = message;
    queued.swap(inbox_);
    aborts_.clear();
    unfinished_ids_.clear();
  }
  cv_.notify_all();
  const auto ended = [&](RequestOutput output) {
    output.finish_reason = FinishReason::kError;
    output.finish_message = message;
    return output;
  };
  for (Queued& q : queued) {
    RequestOutput output;
    output.num_prompt_tokens = static_cast<int64_t>(q.request.prompt_token_ids.size());
    consume(q.consumer, ended(std::move(output)));
  }
  for (auto& [id, live] : live_) consume(live.consumer, ended(std::move(live.pending)));
  live_.clear();
  pending_order_.clear();
}

namespace {

// One rank's loaded model and KV cache.
struct LoadedRank {
  std::unique_ptr<ParallelGroups> groups;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<model::WeightSource> weights;
  std::unique_ptr<model::ModelContext> ctx;
  std::unique_ptr<ModelRunner> runner;
  int32_t num_blocks = 0;
  EngineStats stats;  // the KV geometry and load time (rank 0 reports them)
};

// Loads this rank's weights and allocates its KV cache. Throws ctxpar::Error for a KV budget
// that cannot hold one max_model_len request.
LoadedRank load_rank(const ResolvedEngineConfig& cfg, Communicator& world) {
  const auto load_start = Clock::now();
  omp_set_num_threads(cfg.threads_per_rank);  // oneDNN's threads for this rank
  LoadedRank r;
  r.groups = std::make_unique<ParallelGroups>(world, cfg.raw.tensor_parallel_size,
                                              cfg.raw.decode_context_parallel_size);
  r.pool = std::make_unique<ThreadPool>(cfg.threads_per_rank);
  if (cfg.use_dummy_weights) {
    r.weights = std::make_unique<model::DummyWeights>(cfg.raw.seed);
  } else {
    r.weights = model::Checkpoint::open(cfg.raw.model);
  }
  inject_test_fault(FaultPoint::kLoad, world.rank());
  inject_test_fault(FaultPoint::kOutOfMemory, world.rank());
  r.ctx = std::make_unique<model::ModelContext>(
      model::ModelContext{*r.weights, *r.groups, cfg.options, *r.pool});
  r.runner = std::make_unique<ModelRunner>(cfg.model, *r.ctx, cfg.raw.dummy_context);
  // The layers hold their own copies (huge-page tensors, repacked or quantized); the
  // checkpoint's mapped pages would stay in the RSS as a second copy of the model.
  r.weights->release_pages();

  const std::vector<kv::KvCacheSpec> specs = r.runner->model().kv_cache_specs();
  const kv::KvCapacity cap =
      kv::plan_kv_capacity(cfg.raw.kv_cache_memory, cfg.scheduler.layout, specs);
  CTXPAR_CHECK_INPUT(
      cap.token_capacity >= cfg.scheduler.max_model_len,
      "--kv-cache-memory {} bytes per rank holds {} blocks = {} tokens per DCP group "
      "({} bytes per block), fewer than one request of --max-model-len {}; raise "
      "--kv-cache-memory or lower --max-model-len",
      cfg.raw.kv_cache_memory, cap.num_blocks, cap.token_capacity, cap.bytes_per_block,
      cfg.scheduler.max_model_len);
  r.runner->allocate_kv_cache(cap.num_blocks);
  r.num_blocks = cap.num_blocks;

  EngineStats& s = r.stats;
  s.kv_bytes_per_rank = r.runner->model().kv_cache_bytes();
  s.blocks_per_rank = cap.num_blocks;
  s.token_capacity = cap.token_capacity;
  s.token_capacity_without_dcp = cap.token_capacity_without_dcp;
  for (const kv::KvCacheSpec& spec : specs) {
    s.kv_bytes_per_token_per_rank += spec.bytes_per_block(cfg.scheduler.layout) /
                                     cfg.scheduler.layout.tokens_per_virtual_block();
  }
  s.load_seconds = std::chrono::duration<double>(Clock::now() - load_start).count();
  return r;
}

// Ranks > 0: run whatever rank 0 broadcasts until it says stop.
void worker_loop(Communicator& world, ModelRunner& runner) {
  for (;;) {
    std::vector<uint8_t> bytes;
    world.broadcast_bytes(bytes, 0);
    const StepPlan plan = StepPlan::decode(bytes);
    if (plan.command == StepPlan::Command::kStop) return;
    runner.execute(plan);
  }
}

void run_rank(const ResolvedEngineConfig& cfg, Communicator& world,
              const std::function<void(OnlineEngine&)>& client,
              const OnlineEngineOptions& options) {
  if (world.rank() != 0) {
    LoadedRank loaded = load_rank(cfg, world);
    worker_loop(world, *loaded.runner);
    return;
  }
  OnlineEngine engine(cfg, options);
  std::exception_ptr client_error;
  std::thread client_thread([&] {
    try {
      client(engine);
    } catch (...) {
      client_error = std::current_exception();
    }
    engine.shutdown(ShutdownMode::kAbort);
  });
  try {
    LoadedRank loaded = load_rank(cfg, world);
    engine.run(world, *loaded.runner, loaded.num_blocks, loaded.stats);
  } catch (...) {
    engine.fail(std::current_exception());
    client_thread.join();
    throw;
  }
  client_thread.join();
  if (client_error) std::rethrow_exception(client_error);
}

}  // namespace

void run_online_engine(const EngineConfig& config, const std::function<void(OnlineEngine&)>& client,
                       const OnlineEngineOptions& options) {
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
    run_rank(cfg, *world, client, options);
  } else {
    const ResolvedEngineConfig cfg = resolve_engine_config(config);
    // The first rank to fail aborts the group; its error (naming it) is what this throws.
    run_inprocess_ranks(config.tensor_parallel_size, [&](Communicator& world) {
      try {
        inject_test_fault(FaultPoint::kStartup, world.rank());
        run_rank(cfg, world, client, options);
      } catch (...) {
        rethrow_naming_rank(world.rank());
      }
    });
  }
}

}  // namespace ctxpar::engine
