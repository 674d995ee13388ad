// The online engine (DESIGN.md §6): the engine as a service that takes requests at any time.
//
// run_online_engine() starts the ranks of a config: T threads of this process, or this process
// as one rank under mpirun. Rank 0 builds an OnlineEngine and runs it on its engine thread (the
// thread that runs rank 0, the only one that talks to the other ranks): it loads the model,
// then loops — take the requests and aborts that arrived, schedule a step, broadcast its plan,
// run the forward pass, sample, hand each request's new tokens to that request's consumer —
// while anything is waiting or running, and sleeps on a condition variable when nothing is.
// The other ranks load their shards and run the worker loop: receive a plan, run it, until
// rank 0 broadcasts the stop. Beside the engine thread, rank 0 runs a `client` function on a
// thread of its own (the HTTP server, or `generate` waiting for its batch); the client talks to
// the engine through the thread-safe methods below and returns to end the run.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ctxpar/comm/communicator.h"
#include "ctxpar/core/thread_pool.h"
#include "ctxpar/engine/engine_config.h"
#include "ctxpar/engine/engine_stats.h"
#include "ctxpar/engine/logprobs.h"
#include "ctxpar/engine/request.h"
#include "ctxpar/engine/sampling_params.h"

namespace ctxpar::engine {

class ModelRunner;
class Sampler;
class StructuredOutputState;
class Scheduler;
class StepPlanBuilder;
struct SchedulerOutput;

using Clock = std::chrono::steady_clock;

struct EngineRequest {
  RequestId id;  // unique among the engine's unfinished requests
  std::vector<int32_t> prompt_token_ids;
  SamplingParams params;       // empty eos_token_ids: the model's (config.json) EOS ids
  bool return_logits = false;  // each output token comes with the row of logits it came from
  Clock::time_point arrival_time = Clock::now();  // for the consumer's latency metrics
};

enum class FinishReason : uint8_t {
  kStop,    // EOS or a stop token
  kLength,  // max_tokens, max_model_len or the KV capacity
  kAbort,   // abort() or shutdown
  kError,   // the engine failed; finish_message says why
};
std::string_view finish_reason_name(FinishReason reason);  // "stop", "length", "abort", "error"

// What one request produced since its previous output (a delta), and finally how it ended.
struct RequestOutput {
  std::vector<int32_t> token_ids;         // the new output tokens, in order
  std::vector<SampledLogprobs> logprobs;  // one per new token when params.logprobs is set
  // With params.prompt_logprobs, on the request's first output: one per prompt token after the
  // first (prompt token i + 1 given tokens 0..i; a 1-token prompt has none).
  std::vector<SampledLogprobs> prompt_logprobs;
  std::vector<std::vector<float>> logits;  // one row [vocab] per new token with return_logits
  int64_t num_prompt_tokens = 0;
  int64_t num_cached_tokens = 0;  // Request::num_cached_tokens (prefix-cache hits)
  int64_t num_output_tokens = 0;  // all output tokens so far, these included
  // When the request's first step began (it left the queue); unset before that.
  std::optional<Clock::time_point> first_scheduled;
  std::optional<FinishReason> finish_reason;  // set on the request's last output only
  // The stop_token_ids entry that ended a kStop request (vLLM's stop_reason; unset for EOS).
  std::optional<int32_t> stop_token_id;
  std::string finish_message;  // why it finished, for people

  bool finished() const { return finish_reason.has_value(); }
};

// Receives a request's outputs in order, one call at a time, on the engine thread, after the
// step that produced them; the last call has finish_reason set. It must return quickly (queue
// the output for another thread) and must not call add_request; it may call abort(). If it
// throws, the request is aborted and the exception dropped.
using OutputConsumer = std::function<void(RequestOutput)>;

// The scheduler's state after the latest step, for gauges.
struct EngineSnapshot {
  int32_t num_running = 0;
  int32_t num_waiting = 0;  // queued in the engine or the scheduler, preempted ones included
  int32_t num_blocks = 0;   // KV blocks per rank (0 while loading)
  int32_t num_used_blocks = 0;
  int64_t num_preemptions = 0;
  int64_t num_steps = 0;
};

// What one step did, for OnlineEngineOptions::on_step.
struct StepReport {
  int64_t num_prompt_tokens = 0;  // prefill tokens computed (recomputed ones included)
  int64_t num_sampled = 0;        // tokens sampled
  double seconds = 0;             // forward pass and sampling
  EngineSnapshot snapshot;
};

struct OnlineEngineOptions {
  // Called on the engine thread after each step, once its outputs are delivered.
  std::function<void(const StepReport&)> on_step;
};

enum class ShutdownMode : uint8_t {
  kDrain,  // finish every request the engine holds, then stop
  kAbort,  // end them all with kAbort at once, then stop
};

class OnlineEngine {
 public:
  enum class State : uint8_t { kLoading, kRunning, kStopped, kFailed };

  // Made by run_online_engine on rank 0; `config` must outlive the engine.
  OnlineEngine(const ResolvedEngineConfig& config, OnlineEngineOptions options);
  ~OnlineEngine();
  OnlineEngine(const OnlineEngine&) = delete;
  OnlineEngine& operator=(const OnlineEngine&) = delete;

  // --- Any thread. ---

  // Why the engine could never serve `request` (empty prompt, a token outside the vocabulary,
  // a prompt longer than max_model_len, invalid params), naming the value and the limit;
  // nullopt when it can.
  std::optional<std::string> problem(const EngineRequest& request) const;

  // Queues a request (while loading too: it runs once the model is loaded). Throws
  // ctxpar::Error, queueing nothing, for a problem(), an id held by an unfinished request, or
  // an engine that failed or is shutting down. `consumer` gets every output.
  void add_request(EngineRequest request, OutputConsumer consumer);
  // Queues several at once: they enter the scheduler together, in this order (so a batch is
  // scheduled exactly as if it had been there from the start). All or nothing.
  void add_requests(std::vector<std::pair<EngineRequest, OutputConsumer>> requests);

  // Ends the request with kAbort and frees its KV blocks at the engine's next iteration (its
  // consumer gets the final output). Unknown or finished ids are ignored.
  void abort(const RequestId& id);

  // Stops taking requests and ends the run as `mode` says; returns at once. The first call
  // decides. A client that returns without calling it gets kAbort.
  void shutdown(ShutdownMode mode);

  // Blocks until the model is loaded (true) or loading failed or the engine stopped (false).
  bool wait_until_loaded() const;

  State state() const;
  // Why the engine failed (state() == kFailed); empty otherwise.
  std::string failure() const;
  EngineSnapshot snapshot() const;
  // KV geometry after load, counters since.
  EngineStats stats() const;
  const ResolvedEngineConfig& config() const { return config_; }

  // --- The engine thread (run_online_engine). ---

  // Runs until shutdown; then tells the other ranks to stop. Throws what a step throws (then
  // nothing is sent to the other ranks: under in-process ranks the failure reaches them
  // through the communicator).
  void run(Communicator& world, ModelRunner& runner, int32_t num_blocks,
           const EngineStats& load_stats);
  // Marks the engine failed and ends every request it holds, queued ones included, with
  // kError and `error`'s message.
  void fail(const std::exception_ptr& error);

 private:
  struct Queued {
    EngineRequest request;
    OutputConsumer consumer;
  };
  // A request in the scheduler, engine thread only.
  struct Live {
    OutputConsumer consumer;
    bool return_logits = false;
    RequestOutput pending;  // collected during a step, delivered after it
    // Structured outputs: the grammar state of the request's outputs (rank 0 only samples).
    std::shared_ptr<StructuredOutputState> structured;
  };

  void check_can_add(const std::vector<Queued>& batch) const;  // under mu_
  void admit(std::vector<Queued> batch);
  void step(Communicator& world, ModelRunner& runner);
  // Scores the prompt tokens of the step's all_logits entries into their pending outputs,
  // rows split over `pool`; first_row[i]: entry i's first row of logits, logits_row(row): that
  // row [vocab].
  void collect_prompt_logprobs(const SchedulerOutput& out, std::span<const int64_t> first_row,
                               const std::function<std::span<const float>(int64_t)>& logits_row,
                               ThreadPool& pool);
  void collect_finished();
  void deliver();
  void deliver_one(const RequestId& id, Live& live, RequestOutput output);
  void publish_snapshot();

  const ResolvedEngineConfig& config_;
  const OnlineEngineOptions options_;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;  // the engine thread's wake-up, and loaded waiters
  State state_ = State::kLoading;
  bool loaded_ = false;
  std::string failure_;
  std::optional<ShutdownMode> shutdown_;
  std::vector<Queued> inbox_;
  std::vector<RequestId> aborts_;
  std::unordered_set<RequestId> unfinished_ids_;  // queued or live: ids that cannot be reused
  EngineSnapshot snapshot_;
  EngineStats stats_;

  // Engine thread only.
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<StepPlanBuilder> plans_;
  std::unordered_map<RequestId, Live> live_;
  std::vector<RequestId> pending_order_;  // ids with output pending, in the order they got it
};

// Validates `config` (throws ctxpar::Error before anything starts), launches its ranks and runs
// the engine until `client`, run on rank 0 on a thread of its own, returns (then whatever the
// engine still holds is aborted) and every rank has stopped. Under MPI every process calls
// this and only rank 0 runs `client`. Rethrows, once every rank has stopped: the error that
// failed the engine (loading or a step), else the client's exception.
void run_online_engine(const EngineConfig& config, const std::function<void(OnlineEngine&)>& client,
                       const OnlineEngineOptions& options = {});

}  // namespace ctxpar::engine
