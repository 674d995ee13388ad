// Generation: the engine requests behind one HTTP request (each prompt times n choices) and
// what they produced, shared by the engine thread (whose consumers queue raw outputs and record
// the latency metrics) and the HTTP worker answering the request (which turns the outputs into
// text, stop strings and deltas). Aborts whatever is unfinished when destroyed, so a dropped
// connection frees its KV blocks.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "ctxpar/engine/online_engine.h"
#include "ctxpar/server/metrics.h"
#include "ctxpar/server/output_text.h"
#include "ctxpar/tokenizer/tokenizer.h"

namespace ctxpar::server {

// One choice as it is requested.
struct ChoiceRequest {
  size_t prompt_index = 0;
  std::vector<int32_t> prompt_token_ids;
  engine::SamplingParams params;
};

// When a choice was queued, first scheduled and produced its first and last counted output
// tokens (vLLM's RequestStateStats, for --enable-per-request-metrics).
struct ChoiceTiming {
  engine::Clock::time_point queued;
  std::optional<engine::Clock::time_point> scheduled, first_token, last_token;
};

// What one choice produced since the previous next().
struct ChoiceDelta {
  size_t choice = 0;
  std::string text;
  std::vector<int32_t> token_ids;
  std::vector<engine::SampledLogprobs> logprobs;  // one per token with logprobs
  // With prompt_logprobs, in the choice's first delta: prompt tokens 1.. scored.
  std::vector<engine::SampledLogprobs> prompt_logprobs;
  int64_t num_cached_tokens = 0;             // prompt tokens the prefix cache served
  std::optional<std::string> finish_reason;  // "stop", "length" or "abort" once it ended
  nlohmann::json stop_reason;                // the stop string or stop token id, else null
  std::optional<std::string> error;          // the engine failed: why
  std::optional<ChoiceTiming> timing;        // on the delta that ends the choice
};

class Generation {
 public:
  // `engine`, `metrics` and `tokenizer` outlive the generation.
  Generation(engine::OnlineEngine& engine, ServerMetrics& metrics,
             const tokenizer::Tokenizer& tokenizer, std::string request_id,
             std::vector<ChoiceRequest> choices, const StopStrings& stop, bool skip_special_tokens,
             engine::Clock::time_point arrival);
  ~Generation();
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  // Hands the choices to the engine, all at once. Throws ctxpar::Error if it refuses them.
  void submit();

  // Waits up to `timeout` for outputs and returns what they add, in arrival order (nothing on
  // timeout). Call from one thread.
  std::vector<ChoiceDelta> next(std::chrono::milliseconds timeout);
  // Every choice has ended (as far as next() has reported).
  bool done() const { return num_done_ == choices_.size(); }
  // Ends every unfinished choice (the engine frees their blocks); next() reports the ends.
  void abort();

  size_t num_choices() const { return choices_.size(); }
  const ChoiceRequest& choice(size_t i) const { return choices_[i]->request; }
  // Output tokens that count for choice i (up to a matched stop string).
  int64_t num_output_tokens(size_t i) const { return choices_[i]->counted; }
  const std::string& request_id() const { return request_id_; }

 private:
  // Per choice; `engine_side` fields are touched only by the engine thread's consumer.
  struct Choice {
    Choice(ChoiceRequest r, std::string id, OutputText t)
        : request(std::move(r)), engine_id(std::move(id)), text(std::move(t)) {}
    ChoiceRequest request;
    engine::RequestId engine_id;
    OutputText text;
    int64_t counted = 0;
    bool done = false;
    ChoiceTiming timing;  // reader side, from the queued outputs
    // Set before the server aborts it for a stop string: the metrics count it as "stop".
    std::atomic<bool> stopped_by_string{false};
    // engine side
    bool got_first = false;
    engine::Clock::time_point last_output;
  };
  struct Queued {
    size_t choice;
    engine::RequestOutput output;
    engine::Clock::time_point received;  // when the engine delivered it
  };

  engine::OutputConsumer consumer(size_t i);
  ChoiceDelta apply(size_t i, engine::RequestOutput output, engine::Clock::time_point received);

  engine::OnlineEngine& engine_;
  ServerMetrics& metrics_;
  std::string request_id_;
  engine::Clock::time_point arrival_;
  std::vector<std::unique_ptr<Choice>> choices_;
  size_t num_done_ = 0;
  bool submitted_ = false;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Queued> queue_;
  // The engine has delivered the last output of this many choices (the destructor waits for
  // them all, since the consumers point into this object).
  size_t num_released_ = 0;
};

}  // namespace ctxpar::server
